"""Horizontal fusion (codegen/horizontal.py, driver.merge_horizontal): independent kernels as one
launch, against the same kernels launched apart."""
from __future__ import annotations

import re

import numpy as np
import pytest

import tefuse
from tefuse.codegen.horizontal import MergeError, Member, merge_launches
from tefuse.graph import GraphBuilder
from tefuse.options import BuildOptions

ON = BuildOptions(horizontal=True)


def _branches():
    """Three independent elementwise chains of different shapes, and one that reads the first's
    result (it must run after it: a run of merged kernels ends there)."""
    b = GraphBuilder()
    x = b.input("x", (1000,))
    y = b.input("y", (37, 11))
    z = b.input("z", (4, 5, 6))
    a = b.relu(b.op("mul", x, b.const(np.float32(2.0), name="two")))
    c = b.op("sigmoid", y)
    d = b.op("tanh", z)
    e = b.op("reshape", b.op("exp", a), shape=(10, 100))
    return b.build([a, c, d, e])


def _feeds(rng):
    return {"x": rng.standard_normal(1000).astype(np.float32), "y": rng.standard_normal((37, 11)).astype(np.float32),
            "z": rng.standard_normal((4, 5, 6)).astype(np.float32)}


@pytest.mark.parametrize("target", ["llvm", "cuda:sm_90"])
def test_independent_kernels_share_one_launch(target):
    g = _branches()
    apart = tefuse.build(g, target)
    merged = tefuse.build(g, target, options=ON)
    assert merged.num_kernels < apart.num_kernels, (merged.num_kernels, apart.num_kernels)
    if target.startswith("cuda"):
        (one,) = [k for k in merged.kernels if k.workload.startswith("horizontal(")]
        src = one.source("cuda")
        assert len(re.findall(r"__global__ void __launch_bounds__\(\d+\) main_kernel\(", src)) == 2  # declared, defined
        assert len(one.outputs) >= 3
        return
    rng = np.random.default_rng(0)
    feeds = _feeds(rng)
    for got, want in zip(merged.run(feeds), apart.run(feeds)):
        np.testing.assert_array_equal(got, want)
    x = feeds["x"]
    np.testing.assert_allclose(merged.run(feeds)[0], np.maximum(2 * x, 0), rtol=1e-6)


def test_a_kernel_reading_a_merged_output_runs_after_it():
    g = _branches()
    merged = tefuse.build(g, "llvm", options=ON)
    order = [k.workload.startswith("horizontal(") for k in merged.kernels]
    assert order[0] and not all(order)  # the merged launch first, the dependent kernel after it
    feeds = _feeds(np.random.default_rng(1))
    np.testing.assert_allclose(merged.run(feeds)[3], np.exp(np.maximum(2 * feeds["x"], 0)).reshape(10, 100), rtol=1e-5)


def test_fewer_than_two_or_mixed_kernels_are_refused():
    from tefuse.codegen.lower import lower_group
    from tefuse.fusion import fuse_graph

    func = lower_group(fuse_graph(_branches())[0]).func
    with pytest.raises(MergeError, match="fewer than two"):
        merge_launches([Member(func, 1)], "m")


def test_a_merged_launch_saves_and_loads(tmp_path):
    g = _branches()
    merged = tefuse.build(g, "llvm", options=ON)
    tefuse.save(merged, tmp_path / "m.tefuse")
    back = tefuse.load(tmp_path / "m.tefuse")
    assert back.num_kernels == merged.num_kernels
    feeds = _feeds(np.random.default_rng(2))
    for got, want in zip(back.run(feeds), merged.run(feeds)):
        np.testing.assert_array_equal(got, want)


# -- the merged grid's index arithmetic, checked on the CPU ------------------------------------

def _serial(func):
    """The GPU kernel with its thread-bound loops made serial: each block's and thread's work in
    turn, so a kernel whose threads share nothing computes the same on llvm."""
    from tvm import tirx as tir
    from tvm_ffi import structural_map

    def serial(loop):
        if loop.kind != tir.ForKind.THREAD_BINDING:
            return loop
        return tir.For(loop.loop_var, loop.min, loop.extent, tir.ForKind.SERIAL, loop.body)

    return func.with_body(structural_map(func.body, (tir.For, serial)))


def _grid_2d(n, m):
    """y = x * 3 over an [n, m] tensor on blockIdx.y (rows), blockIdx.x and threadIdx.x (64 columns
    a block): a member with a grid of two axes."""
    from tvm import s_tir, te

    x = te.placeholder((n, m), name="x2")
    y = te.compute((n, m), lambda i, j: x[i, j] * 3.0, name="y2")
    sch = s_tir.Schedule(te.create_prim_func([x, y]))
    i, j = sch.get_loops(sch.get_sblock("y2"))
    jo, ji = sch.split(j, [None, 64])
    sch.bind(i, "blockIdx.y")
    sch.bind(jo, "blockIdx.x")
    sch.bind(ji, "threadIdx.x")
    return sch.mod["main"]


def test_the_merged_grid_gives_each_member_its_own_blocks_and_threads():
    import tvm
    from tefuse.codegen.horizontal import grid, thread_blocks
    from tefuse.driver import prepare_groups
    from tefuse.fusion import fuse_graph
    from tefuse.target import make_target

    g = _branches()
    target = make_target("cuda:sm_90")
    _, preps = prepare_groups(target, lambda bare: fuse_graph(g, bare_anchors=bare), jobs=1)
    members = [Member(p.mod["main"], len(p.lowered.params)) for p in preps[:3]]
    members.append(Member(_grid_2d(5, 130), 1))  # 5 x 3 blocks of 64 threads, the others 256
    assert [thread_blocks(m.func) for m in members] == [4, 2, 1, 15]
    func = merge_launches(members, "main")
    assert thread_blocks(func) == 22 and grid(func).threads == (("threadIdx.x", 256),)
    lib = tvm.compile(tvm.IRModule({"main": _serial(func).with_attr("global_symbol", "main")}), target="llvm")
    rng = np.random.default_rng(3)
    feeds = _feeds(rng)
    x2 = rng.standard_normal((5, 130)).astype(np.float32)
    ins = [feeds["x"], feeds["y"], feeds["z"], x2]
    outs = [np.full((1000,), np.nan, np.float32), np.full((37, 11), np.nan, np.float32),
            np.full((4, 5, 6), np.nan, np.float32), np.full((5, 130), np.nan, np.float32)]
    args = [tvm.runtime.tensor(a) for a in ins + outs]
    lib["main"](*args)
    got = [a.numpy() for a in args[4:]]
    np.testing.assert_allclose(got[0], np.maximum(2 * feeds["x"], 0), rtol=1e-6)
    np.testing.assert_allclose(got[1], 1 / (1 + np.exp(-feeds["y"])), rtol=1e-5)
    np.testing.assert_allclose(got[2], np.tanh(feeds["z"]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[3], x2 * 3, rtol=1e-6)


def test_kernels_sharing_memory_with_other_block_shapes_are_refused():
    from tefuse.driver import prepare_groups
    from tefuse.fusion import fuse_graph
    from tefuse.target import make_target

    g = _inception()
    _, preps = prepare_groups(make_target("cuda:sm_90"), lambda bare: fuse_graph(g, bare_anchors=bare), jobs=1)
    pool = next(p for p in preps if p.choice.template.name == "cuda_cross_thread_reduction")
    conv = next(p for p in preps if p.choice.template.name == "conv2d_direct")
    with pytest.raises(MergeError, match="launch different threads"):
        merge_launches([Member(p.mod["main"], len(p.lowered.params)) for p in (pool, conv)], "m")


# -- a network's parallel branches -------------------------------------------------------------

def _inception():
    """An Inception block at batch 1: four branches (1x1; 1x1 then 3x3; 1x1 then 5x5; a 3x3 max
    pool then 1x1) of small convs, concatenated."""
    b = GraphBuilder()
    x = b.input("x", (1, 32, 14, 14))
    rng = np.random.default_rng(0)

    def conv(v, cin, cout, k, name):
        w = b.const((rng.standard_normal((cout, cin, k, k)) / np.sqrt(cin * k * k)).astype(np.float32), name=name)
        return b.relu(b.conv2d(v, w, padding=[k // 2] * 4))

    a = conv(x, 32, 16, 1, "a")
    c = conv(conv(x, 32, 8, 1, "c1"), 8, 16, 3, "c2")
    d = conv(conv(x, 32, 4, 1, "d1"), 4, 8, 5, "d2")
    e = conv(b.op("max_pool2d", x, kernel=[3, 3], strides=[1, 1], padding=[1, 1, 1, 1]), 32, 8, 1, "e")
    return b.build([b.op("concat", a, c, d, e, axis=1)])


def _inception_reference(g, x):
    from tests import reference

    w = {n.name: n.value for n in g.constants}

    def conv(v, name):
        k = w[name].shape[-1]
        return np.maximum(reference.conv2d(v, w[name], padding=k // 2), 0)

    e = reference.pool2d(x, "max", (3, 3), (1, 1), (1, 1, 1, 1))
    return np.concatenate([conv(x, "a"), conv(conv(x, "c1"), "c2"), conv(conv(x, "d1"), "d2"), conv(e, "e")], axis=1)


def test_an_inception_blocks_branches_share_launches():
    g = _inception()
    apart = tefuse.build(g, "llvm")
    merged = tefuse.build(g, "llvm", options=ON)
    assert merged.num_kernels < apart.num_kernels, (merged.num_kernels, apart.num_kernels)
    x = np.random.default_rng(4).standard_normal((1, 32, 14, 14)).astype(np.float32)
    (got,), (want,) = merged.run(x=x), apart.run(x=x)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got, _inception_reference(g, x), rtol=1e-4, atol=1e-5)


def test_an_inception_blocks_convs_share_one_cuda_kernel_each_level():
    g = _inception()
    merged = tefuse.build(g, "cuda:sm_90", options=ON)
    apart = tefuse.build(g, "cuda:sm_90")
    assert merged.num_kernels < apart.num_kernels, (merged.num_kernels, apart.num_kernels)
    convs = [k for k in merged.kernels if k.workload.startswith("horizontal(") and k.template == "conv2d_direct"]
    assert convs
    for k in convs:
        src = k.source("cuda")
        assert len(re.findall(r"__global__ void __launch_bounds__\(\d+\) main_kernel\(", src)) == 2
        assert src.count("__syncthreads()") >= 2  # the members' barriers, inside block-uniform branches


def _inception_nhwc(c=64):
    """An fp16-sized Inception block, channels last: its branch convs run on Hopper's wgmma."""
    b = GraphBuilder()
    x = b.input("x", (1, 14, 14, c), "float16")
    rng = np.random.default_rng(1)

    def conv(v, cin, cout, k):
        w = (rng.standard_normal((k, k, cin, cout)) / np.sqrt(cin * k * k)).astype(np.float16)
        return b.relu(b.conv2d(v, b.const(w), padding=[k // 2] * 4, layout="NHWC"))

    a = conv(x, c, 64, 1)
    r = conv(conv(x, c, 64, 1), 64, 64, 3)
    s = conv(conv(x, c, 32, 1), 32, 64, 3)
    p = conv(b.op("max_pool2d", x, kernel=[3, 3], strides=[1, 1], padding=[1, 1, 1, 1], layout="NHWC"), c, 64, 1)
    return b.build([b.op("concat", a, r, s, p, axis=3)])


@pytest.mark.parametrize("target, template, fragments", [("cuda:sm_90", "wgmma_gemm", 1),
                                                          ("cuda:sm_80", "tensorcore_gemm", 3)])
def test_tensor_core_convs_share_a_launch_with_every_fragment_in_registers(target, template, fragments):
    """The branch convs of a level on wgmma (sm_90) or mma.sync (sm_80) share one launch; every
    member's fragments (wgmma: the accumulators; mma.sync: A, B and the accumulators) are lowered
    to the lane's registers (schedules/warp_memory.py), where TVM's pass alone left all but the
    first a whole-warp array in every thread (1024 elements, not 32)."""
    merged = tefuse.build(_inception_nhwc(), target, precision="fp16", options=ON)
    shared = [k for k in merged.kernels if k.workload.startswith("horizontal(") and k.template == template]
    assert shared and all(k.workload.count("@") >= 2 for k in shared)
    for k in shared:
        sizes = [int(n) for n in re.findall(r"(?:float|half) \w*_warp\w*\[(\d+)\]", k.source("cuda"))]
        assert len(sizes) == fragments * k.workload.count("@") and max(sizes) <= 64, sizes
