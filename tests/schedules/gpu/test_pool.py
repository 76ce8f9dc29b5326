"""The NHWC window-pool template (schedules/gpu/pool.py) without a GPU: it is the untuned
choice for NHWC max/avg pools (NCHW and global pools stay with the cross-thread reduction
template), its CUDA loads and stores channels as vectors and compiles to PTX, and its schedule
(the same loops, unbound) computes numpy's numbers on llvm, padding and NaN included."""
from __future__ import annotations

import random
import re
import shutil

import numpy as np
import pytest
import tvm
from tvm import s_tir

import tefuse
from tefuse import GraphBuilder
from tefuse.codegen.lower import lower_group
from tefuse.codegen.schedule import ScheduleChoice
from tefuse.codegen.ptx import compile_to_ptx
from tefuse.driver import build_group
from tefuse.fusion import fuse_graph
from tefuse.schedules.gpu.pool import CudaWindowPool
from tefuse.target import make_target

NAME = "cuda_window_pool"
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


def pool_graph(kind, shape, dtype="float16", layout="NHWC", relu=False, **attrs):
    b = GraphBuilder()
    y = b.op(f"{kind}_pool2d", b.input("x", shape, dtype), layout=layout, **attrs)
    return b.build(b.relu(y) if relu else y)


def np_pool(kind, x, layout, kernel, strides, padding, count_include_pad=False):
    """A plain numpy pool (NHWC or NCHW), floats in float64; NaN in a window gives NaN."""
    xs = np.moveaxis(x, 1, 3) if layout == "NCHW" else x
    xs = xs.astype("float64")
    n, h, w, c = xs.shape
    kh, kw = kernel
    sh, sw = strides
    t, l, b, r = padding
    oh, ow = (h + t + b - kh) // sh + 1, (w + l + r - kw) // sw + 1
    out = np.empty((n, oh, ow, c))
    for y in range(oh):
        for z in range(ow):
            y0, z0 = y * sh - t, z * sw - l
            win = xs[:, max(y0, 0):min(y0 + kh, h), max(z0, 0):min(z0 + kw, w), :]
            if kind == "max":
                out[:, y, z] = win.max(axis=(1, 2))
            else:
                cnt = kh * kw if count_include_pad else win.shape[1] * win.shape[2]
                out[:, y, z] = win.sum(axis=(1, 2)) / cnt
    return np.moveaxis(out, 3, 1) if layout == "NCHW" else out


CASES = {  # (kind, NHWC shape, attrs)
    "max_3x3_s2_pad1": ("max", (2, 11, 11, 32), dict(kernel=3, strides=2, padding=1)),
    "avg_3x3_s2_pad1": ("avg", (2, 11, 11, 32), dict(kernel=3, strides=2, padding=1)),
    "avg_3x3_s1_pad1_include": ("avg", (1, 7, 9, 24), dict(kernel=3, strides=1, padding=1, count_include_pad=True)),
    "max_2x2_s2_c12": ("max", (3, 8, 8, 12), dict(kernel=2, strides=2)),
    "max_3x2_c5_asym_pad": ("max", (1, 9, 8, 5), dict(kernel=(3, 2), strides=(2, 1), padding=(1, 0, 1, 1))),
}


def _pad4(p):
    p = (p,) * 4 if isinstance(p, int) else tuple(p)
    return p if len(p) == 4 else (p[0], p[1], p[0], p[1])


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _reference(kind, x, attrs, layout="NHWC"):
    return np_pool(kind, x.astype("float32"), layout, _pair(attrs["kernel"]), _pair(attrs.get("strides", 1)),
                   _pad4(attrs.get("padding", 0)), attrs.get("count_include_pad", False))


def test_chosen_for_nhwc_window_pools_only():
    for kind in ("max", "avg"):
        for dtype in ("float16", "float32"):
            cg = tefuse.build(pool_graph(kind, (2, 9, 9, 16), dtype, kernel=3, strides=2, padding=1), "cuda")
            assert [k.template for k in cg.kernels] == [NAME]
    # NCHW (the window runs along W, as cross-thread rows) and global pools are the reduction template's
    nchw = tefuse.build(pool_graph("max", (2, 16, 9, 9), "float16", "NCHW", kernel=3, strides=2, padding=1), "cuda")
    assert [k.template for k in nchw.kernels] == ["cuda_cross_thread_reduction"]
    compile_to_ptx(nchw.source("cuda"))
    b = GraphBuilder()
    gap = b.build(b.global_avg_pool2d(b.input("x", (2, 7, 7, 64), "float16"), layout="NHWC"))
    assert [k.template for k in tefuse.build(gap, "cuda").kernels] == ["cuda_cross_thread_reduction"]


@needs_nvcc
@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_cuda_loads_and_stores_channel_vectors_and_compiles(kind, dtype):
    """ResNet-50's stem pool at batch 2: each window tap is one vector load of 4 channels (8
    bytes in fp16, 16 in fp32), the output one vector store, a ReLU epilogue in the same kernel."""
    g = pool_graph(kind, (2, 112, 112, 64), dtype, relu=True, kernel=3, strides=2, padding=1)
    (k,) = tefuse.build(g, "cuda").kernels
    assert k.template == NAME
    src = k.source("cuda")
    ptx = compile_to_ptx(src)
    elem = "u16" if dtype == "float16" else "f32"
    assert re.search(rf"ld\.global\.nc\.v4\.{elem}", ptx), "window taps are not loaded as vectors"
    assert re.search(rf"st\.global\.v4\.{elem}", ptx), "the output is not stored as vectors"
    assert not re.search(r"ld\.global\.nc\.(u16|f32|b16|b32)\s", ptx), "a scalar load is left"


@needs_nvcc
def test_an_int8_max_pool_compiles_with_four_codes_a_load():
    g = pool_graph("max", (2, 112, 112, 64), "int8", kernel=3, strides=2, padding=1)
    (k,) = tefuse.build(g, "cuda").kernels
    ptx = compile_to_ptx(k.source("cuda"))
    assert k.template == NAME and re.search(r"ld\.global\.nc\.u32", ptx) and re.search(r"st\.global\.u32", ptx)
    assert not re.search(r"ld\.global\.nc\.[us]8\s", ptx), "a single-code load is left"


def test_an_int8_max_pool_is_scheduled_and_computes_numpys_codes_on_llvm():
    """A max pool of int8 codes (a quantized model's, graph/pool_codes.py) has no order keys to
    decode: its reduction is the kernel's output, stored from the thread's registers; its padding
    is the lowest code."""
    kind, shape, attrs = CASES["max_3x3_s2_pad1"]
    g = pool_graph(kind, shape, "int8", **attrs)
    x = np.random.default_rng(0).integers(-128, 128, shape).astype("int8")
    want = _reference(kind, x, attrs)
    got, space = _run_on_llvm(g, x=x)
    np.testing.assert_array_equal(got, want)
    for i in random.Random(len(space)).sample(range(len(space)), min(4, len(space))):
        got, _ = _run_on_llvm(g, space.get(i).values, x=x)
        np.testing.assert_array_equal(got, want, err_msg=str(space.get(i).values))


def _run_on_llvm(graph, cfg_values=None, x=None):
    (group,) = fuse_graph(graph)
    lowered = lower_group(group)
    cuda, llvm = make_target("cuda"), make_target("llvm")
    t = CudaWindowPool()
    space = t.space(lowered.info, cuda)
    cfg = t.fallback(lowered.info, cuda, space) if cfg_values is None else space.from_values(cfg_values)
    sch = s_tir.Schedule(lowered.func)
    t.apply(sch, lowered.info, cfg, llvm)
    lib = tvm.compile(sch.mod, target=llvm)
    dev = tvm.cpu()
    out = tvm.runtime.empty(group.outputs[0].shape, group.outputs[0].dtype, dev)
    lib["main"](tvm.runtime.tensor(x, dev), out)
    return out.numpy(), space


@pytest.mark.parametrize("dtype", ["float16", "float32"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_schedule_computes_numpys_numbers_on_llvm(case, dtype):
    """The fallback and sampled configs (every vector width, block size, unroll) on llvm."""
    kind, shape, attrs = CASES[case]
    g = pool_graph(kind, shape, dtype, **attrs)
    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    want = _reference(kind, x, attrs)
    got, space = _run_on_llvm(g, x=x)
    tol = 2e-3 if dtype == "float16" else 1e-6
    np.testing.assert_allclose(got.astype("float64"), want, rtol=tol, atol=tol)
    for i in random.Random(len(space)).sample(range(len(space)), min(4, len(space))):
        got, _ = _run_on_llvm(g, space.get(i).values, x=x)
        np.testing.assert_allclose(got.astype("float64"), want, rtol=tol, atol=tol, err_msg=str(space.get(i).values))


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_max_pool_propagates_nan(dtype):
    kind, shape, attrs = CASES["max_3x3_s2_pad1"]
    x = np.random.default_rng(1).standard_normal(shape).astype(dtype)
    x[0, 4, 4, 3] = np.nan
    x[1, 0, 0, 7] = -np.nan
    got, _ = _run_on_llvm(pool_graph(kind, shape, dtype, **attrs), x=x)
    want = _reference(kind, x, attrs)
    assert (np.isnan(got) == np.isnan(want)).all() and np.isnan(want).sum() >= 2
    np.testing.assert_array_equal(got[~np.isnan(got)].astype("float64"), want[~np.isnan(want)])


def test_fallback_fills_the_gpu_and_knobs():
    info = lower_group(fuse_graph(pool_graph("max", (32, 112, 112, 64), kernel=3, strides=2, padding=1))[0]).info
    cuda = make_target("cuda")
    t = CudaWindowPool()
    space = t.space(info, cuda)
    assert {k.name for k in space.knobs} == {"vec", "threads", "unroll"}
    assert t.fallback(info, cuda, space).values["vec"] == 4
    # a small pool: fewer channels per thread and smaller blocks so that every SM gets work
    small = lower_group(fuse_graph(pool_graph("max", (1, 14, 14, 64), kernel=3, strides=2, padding=1))[0]).info
    fb = t.fallback(small, cuda, t.space(small, cuda)).values
    assert fb["vec"] * fb["threads"] < 4 * 256


@needs_nvcc
def test_fp16_model_path_pool_after_the_layout_pass():
    """An NCHW float32 conv -> relu -> max pool built in fp16: the layout pass makes the pool
    NHWC, the pool gets this template, and the CUDA builds; the same graph on llvm matches
    the float32 numbers."""
    rng = np.random.default_rng(2)
    w = rng.standard_normal((16, 8, 3, 3)).astype("float32") / 6
    b = GraphBuilder()
    y = b.max_pool2d(b.relu(b.conv2d(b.input("x", (2, 8, 20, 20)), b.const(w), padding=1)),
                     kernel=3, strides=2, padding=1)
    g = b.build(b.relu(b.conv2d(y, b.const(rng.standard_normal((32, 16, 1, 1)).astype("float32") / 4))))
    cg = tefuse.build(g, "cuda", precision="fp16")
    pools = [k for k in cg.kernels if "pool" in k.group.name]
    assert pools and all(k.template == NAME for k in pools)
    for k in pools:
        compile_to_ptx(k.source("cuda"))
    x = rng.standard_normal((2, 8, 20, 20)).astype("float32")
    want = tefuse.build(g, "llvm").run(x=x)[0]
    got = tefuse.build(g, "llvm", precision="fp16", layout="NHWC").run(x=x)[0]
    assert np.abs(got - want).max() <= 1e-2 * np.abs(want).max()


@needs_nvcc
@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("vec", [8, 4])
def test_every_vector_width_compiles_in_fp16(kind, vec):
    """fp16 max pooling keeps int16 order keys: 8 of them in one thread's accumulator, behind a
    scaling prologue, must still make CUDA that nvcc accepts (a vectorized int16x8 init did not)."""
    b = GraphBuilder()
    x = b.mul(b.input("x", (2, 112, 112, 64), "float16"), b.const(np.array(0.5, "float16")))
    g = b.build(b.relu(b.op(f"{kind}_pool2d", x, layout="NHWC", kernel=3, strides=2, padding=1)))
    (grp,) = fuse_graph(g)
    cuda = make_target("cuda")
    t = CudaWindowPool()
    info = lower_group(grp).info
    space = t.space(info, cuda)
    cfgs = [space.get(i) for i in range(len(space)) if space.get(i).values["vec"] == vec]
    assert cfgs
    for cfg in cfgs[:3]:
        k = build_group(grp, cuda, choice=ScheduleChoice(t, cfg, "tuned"))
        compile_to_ptx(k.source("cuda"))
