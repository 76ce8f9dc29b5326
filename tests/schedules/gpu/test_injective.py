"""The CUDA injective template: a 16-bit output whose rows hold whole 16-byte vectors is stored
one vector a thread by its untuned kernel (the ResNet stem's pad to paired 4-channel pixels
took 10 us at batch 16 one element a thread); other outputs keep one element a thread, and
tuning records written before the `vector` knob still mean what they did. Numerics: the GPU
test (tests/gpu/test_injective_gpu.py)."""
from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

import tefuse
from tefuse.graph import GraphBuilder
from tefuse.schedules.gpu.injective import CudaInjective

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


def _stem_pad(n=2, hw=8, dtype="float16"):
    """[N, H, W, 3] -> its channels padded to 4 -> pixel pairs [N, H, W/2, 8] (graph/weights)."""
    b = tefuse.GraphBuilder()
    x = b.input("x", (n, hw, hw, 3), dtype)
    return b.build(b.reshape(b.pad(x, pads=(0, 0, 0, 0, 0, 0, 0, 1)), shape=(n, hw, hw // 2, 8)))


def _bias_relu(c, dtype="float16"):
    b = tefuse.GraphBuilder()
    x, y = b.input("x", (2, 7, 7, c), dtype), b.input("y", (c,), dtype)
    return b.build(b.relu(b.bias_add(x, y, axis=3)))


def _adam_like(dtype="float16"):
    """Two outputs of one nest (a multi-output elementwise group)."""
    b = tefuse.GraphBuilder()
    x, y = b.input("x", (4, 64), dtype), b.input("y", (4, 64), dtype)
    s = b.add(x, y)
    return b.build([s, b.mul(s, y)])


def _space(group):
    from tefuse.codegen.lower import lower_group
    from tefuse.target import make_target

    return CudaInjective().space(lower_group(group).info, make_target("cuda:sm_90"))


def _fallback(graph, target="cuda:sm_90"):
    from tefuse.codegen.lower import lower_group
    from tefuse.fusion import fuse_graph
    from tefuse.target import make_target

    (group,) = fuse_graph(graph)
    info, tgt = lower_group(group).info, make_target(target)
    t = CudaInjective()
    space = t.space(info, tgt)
    return t, info, tgt, space, t.fallback(info, tgt, space)


def _kernel(graph):
    """(the kernel's config values, its CUDA from the kernel's entry on)"""
    (k,) = tefuse.build(graph, "cuda:sm_90").kernels
    assert k.template == "cuda_injective" and k.config_source == "fallback"
    src = k.source("cuda")
    return _space(k.group).get(k.config_index).values, src[src.index('extern "C" __global__'):]


def _stores(src: str, out: str) -> tuple[int, int]:
    """(vector stores, scalar stores) to the output buffer `out`."""
    vec = len(re.findall(rf"\*\(uint4\*\)\({out}_ptr \+", src))
    scalar = len(re.findall(rf"(?<![\w*(]){out}_ptr\[", src))
    return vec, scalar


@pytest.mark.parametrize("graph, out", [(_stem_pad, "out_reshape"), (lambda: _bias_relu(64), "out_relu")],
                         ids=["stem_pad", "bias_relu"])
def test_a_16_bit_output_stores_one_vector_a_thread(graph, out):
    cfg, src = _kernel(graph())
    assert cfg["vector"] and cfg["inner"] == 8
    assert _stores(src, re.search(r"half\* __restrict__ (out_\w+)_ptr", src).group(1)) == (1, 0)


@pytest.mark.parametrize("graph", [lambda: _bias_relu(64, "float32"), lambda: _bias_relu(12)],
                         ids=["float32", "rows_of_12_halves"])
def test_other_outputs_keep_one_element_a_thread(graph):
    cfg, src = _kernel(graph())
    assert not cfg["vector"] and cfg["inner"] == 1
    out = re.search(r"(?:half|float)\* __restrict__ (out_\w+)_ptr\)", src).group(1)
    assert _stores(src, out) == (0, 1)


def test_a_multi_output_nest_builds_with_scalar_stores():
    (k,) = tefuse.build(_adam_like(), "cuda:sm_90").kernels
    src = k.source("cuda")
    assert "uint4" not in src[src.index('extern "C" __global__'):]


def test_a_record_from_before_the_vector_knob_means_unrolled():
    from tefuse.fusion import fuse_graph

    (group,) = fuse_graph(_bias_relu(64))
    space = _space(group)
    old = space.find({"threads": 128, "inner": 4})  # a shipped fp16 record's values
    assert old is not None and space.get(old).values == {"threads": 128, "inner": 4, "vector": False, "pixel": False}
    assert space.get(space.find({"threads": 128, "inner": 4, "vector": True}))["vector"]


@pytest.mark.parametrize("n, threads", [(16, 256), (1, 64)])
def test_vector_blocks_shrink_until_every_sm_has_two(n, threads):
    """The stem's pad at 224x224: 401408 vectors at batch 16 fill 1568 blocks of 256; at batch 1,
    25088 vectors would be 98 blocks of 256 for 132 SMs, so they go in blocks of 64 (392)."""
    cfg = _fallback(_stem_pad(n, 224))[-1]
    assert (cfg["threads"], cfg["inner"], cfg["vector"]) == (threads, 8, True)


def _compare():
    b = tefuse.GraphBuilder()
    x, y = b.input("x", (4, 64), "float16"), b.input("y", (4, 64), "float16")
    return b.build(b.greater(x, y))


def test_bools_and_vectors_past_16_bytes_are_not_in_the_space():
    """TVM stores 4 one-byte bools as a ushort4 (8 bytes); 8 float32 lanes would be 32 bytes."""
    for graph, widest in ((_compare(), None), (_bias_relu(64, "float32"), 4), (_bias_relu(64), 8)):
        _, _, _, space, cfg = _fallback(graph)
        vectors = sorted({c["inner"] for c in space if c["vector"] and space.admits(c.index)})
        assert vectors == ([] if widest is None else [i for i in (2, 4, 8) if i <= widest])
        if widest is None:  # the comparison's bools: no vector in the untuned config either
            assert not cfg["vector"]


@pytest.mark.parametrize("make, target", [(_adam_like, "cuda:sm_90"), (_stem_pad, "rocm:gfx942")],
                         ids=["two_outputs", "rocm"])
def test_multi_output_groups_and_rocm_keep_the_scalar_fallback(make, target):
    t, info, tgt, space, cfg = _fallback(make(), target)
    assert cfg.index == 0 and not cfg["vector"]
    assert list(t.fallback_alternatives(info, tgt, space, cfg)) == []  # nothing to retry it as


def _planar_resize(channels=3, layout="NCHW"):
    """uint8 HWC image -> two rectangles resized to 16x16 -> normalised, planar or packed."""
    b = tefuse.GraphBuilder()
    img, rects = b.input("img", (40, 50, channels), "uint8"), b.input("rects", (2, 4), "int32")
    r = b.normalize(b.crop_resize(img, rects, size=(16, 16)), sub=(1.0,) * channels, div=(2.0,) * channels)
    return b.build(b.transpose(r, axes=(0, 3, 1, 2)) if layout == "NCHW" else r)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_a_resampling_kernel_computes_a_pixels_channels_in_one_thread(layout):
    """Its channels share the window's coordinates and loads: one thread stores all three (the
    NV12 pipeline's planar kernel went from 407 PTX instructions a channel to 253 a pixel)."""
    cfg, src = _kernel(_planar_resize(3, layout))
    assert cfg["pixel"] and cfg["inner"] == 1
    out = re.search(r"float\* __restrict__ (out_\w+)_ptr\)", src).group(1)
    assert _stores(src, out) == (0, 3)


@pytest.mark.parametrize("pixels, threads", [(5 * 60 * 60, 64), (2 * 16 * 16 * 100, 128), (4 * 224 * 224, 256)])
def test_a_small_resampling_kernel_takes_blocks_that_fill_the_sms(pixels, threads):
    """FKL's example (5 planes of 60x60) is 18000 pixels: 71 blocks of 256 would leave half of
    an H100's 132 SMs idle; the block shrinks until there are two blocks an SM, or to 64."""
    b = tefuse.GraphBuilder()
    img, rects = b.input("img", (64, 64, 3), "uint8"), b.input("rects", (pixels // 3600, 4), "int32")
    t, info, tgt, space, cfg = _fallback(b.build(b.crop_resize(img, rects, size=(60, 60))))
    assert cfg["pixel"] and cfg["threads"] == threads


@pytest.mark.parametrize("case", ["rgb", "nv12"])
def test_pre_processing_cuda_holds_no_float_division_and_no_branch(case):
    """What lets nvcc share a pixel's work between its channels, on TVM's CUDA source (no nvcc
    needed): no float division, by a float variable or a float constant (a scale is fastmath's
    sample ratio, normalize a multiply-add), and no `condval` branch (TVM's form of a select
    whose arm loads). PTX: the test below."""
    from tefuse.bench.preprocess import nv12_case, rgb_case

    c = rgb_case(coordinate="asymmetric") if case == "rgb" else nv12_case()
    (k,) = tefuse.build(c.graph, "cuda:sm_90").kernels
    body = k.source("cuda")
    body = body[body.index('extern "C" __global__'):]
    assert not re.search(r"/ \(\(float\)|/ -?0x[0-9a-f.]+p", body)
    assert "condval" not in body
    assert ("fdividef(" in body) == (case == "rgb")  # the fitted rectangle's run-time extent


@needs_nvcc
@pytest.mark.parametrize("case", ["rgb", "nv12"])
def test_pre_processing_kernels_neither_divide_nor_branch_a_channel(case):
    """The bench's pipelines (FKL's example, keep-aspect-ratio, and the NV12 one): no IEEE
    division (its slow-path call is a point nvcc schedules no load across), no division call at
    all, and the window's source bytes are loaded once a pixel, not once a channel (12 for
    bilinear RGB: 4 taps of 3 bytes; NV12: 4 Y and 4 U, V pairs)."""
    from tefuse.bench.preprocess import nv12_case, rgb_case
    from tefuse.codegen.ptx import compile_to_ptx

    c = rgb_case(coordinate="asymmetric") if case == "rgb" else nv12_case()
    ptx = compile_to_ptx(tefuse.build(c.graph, "cuda:sm_90").source("cuda"), "sm_90")
    assert "div.rn.f32" not in ptx and "call" not in ptx
    assert len(re.findall(r"ld\.global\.nc\.u8", ptx)) == 12
    assert len(re.findall(r"ld\.global\.nc\.u32", ptx)) == 4  # the rectangle, once


def test_a_kernel_that_samples_nothing_keeps_one_element_a_thread():
    b = tefuse.GraphBuilder()
    x = b.input("x", (2, 3, 16, 16), "float32")
    cfg, src = _kernel(b.build(b.relu(x)))
    assert not cfg["pixel"]


def test_the_pixel_knob_needs_a_small_channel_axis():
    """A resize whose output has no axis of 2-4 elements offers no pixel config."""
    b = tefuse.GraphBuilder()
    img, rects = b.input("img", (40, 50, 8), "uint8"), b.input("rects", (5, 4), "int32")
    t, info, tgt, space, cfg = _fallback(b.build(b.crop_resize(img, rects, size=(16, 16))))
    assert not cfg["pixel"]
    assert not any(c["pixel"] and space.admits(c.index) for c in space)


def concat_bn_relu(segs=(64, 32, 32), axis=3, dtype="float16", rest=(2, 4, 4), seed=0):
    """DenseNet's injective kernel: inputs concatenated along `axis` (segment sizes `segs`, the
    other dims `rest` in order), an inference batch-norm with constant statistics, a ReLU."""
    rng = np.random.default_rng(seed)
    b = tefuse.GraphBuilder()
    shape = lambda s: rest[:axis] + (s,) + rest[axis:]  # noqa: E731
    xs = [b.input(f"x{k}", shape(s), dtype) for k, s in enumerate(segs)]
    c = sum(segs)
    stats = [rng.uniform(0.5, 1.5, c), rng.normal(size=c), rng.normal(size=c), rng.uniform(0.5, 2.0, c)]
    bn = b.batch_norm(b.concat(*xs, axis=axis), *(b.const(s.astype(dtype)) for s in stats), axis=axis)
    return b.build(b.relu(bn))


def _loads(src: str, name: str) -> tuple[int, int]:
    """(16-byte vector loads, scalar loads) of input `name`."""
    return (len(re.findall(rf"\*\(uint4\*\)\(in_{name}_ptr \+", src)),
            len(re.findall(rf"(?<![\w*(])in_{name}_ptr\[", src)))


@pytest.mark.parametrize("segs, axis, rest", [((64, 32, 32, 32), 3, (2, 4, 4)), ((16, 8, 24), 1, (2, 3, 16))],
                         ids=["nhwc_channels", "nchw_channels"])
def test_a_concat_of_whole_vectors_loads_each_input_one_vector_at_a_time(segs, axis, rest):
    """DenseNet's concat + batch-norm + ReLU (64 + 32 * k channels, fp16): every segment a
    multiple of the 8-lane vector (NHWC), or the concat off the vector's axis (NCHW, rows of
    16), so a thread's lanes take one branch: one 16-byte load from the input it picks and one
    branch chain a vector, not 8 of each (186 us for DenseNet-121 b32's largest such kernel on
    an H200 where its bytes take 25 us to copy). Its batch-norm is one multiply-add an element."""
    cfg, src = _kernel(concat_bn_relu(segs, axis, rest=rest))
    assert cfg["vector"] and cfg["inner"] == 8
    for k in range(len(segs)):
        assert _loads(src, f"x{k}") == (1, 0), k
    assert src.count("if (") == len(segs) - 1  # the branch chain, once
    assert "sqrtf" not in src and "scale" in src and "shift" in src
    assert _stores(src, re.search(r"half\* __restrict__ (out_\w+)_ptr", src).group(1)) == (1, 0)


def test_a_concat_of_partial_vectors_keeps_a_branch_a_lane():
    """Segments of 12 and 20 halves: a vector's lanes may straddle two inputs, so each lane
    loads its own element (its stores stay vectors)."""
    cfg, src = _kernel(concat_bn_relu((12, 20, 32)))
    assert cfg["vector"] and cfg["inner"] == 8
    assert _loads(src, "x0") == (0, 8) and _loads(src, "x2") == (0, 8)
    assert _stores(src, re.search(r"half\* __restrict__ (out_\w+)_ptr", src).group(1)) == (1, 0)


def test_an_int8_quantize_of_halves_loads_16_bytes_and_stores_8_a_thread():
    """An int8 build's QuantizeLinear of an fp16 activation (a residual block's output, read by
    the next convs as int8): 8 lanes a thread, one 16-byte load of its input and one 8-byte
    store, not one 2-byte load and one 1-byte store an element; exact against numpy."""
    b = GraphBuilder()
    x = b.input("x", (2, 7, 7, 64), "float16")
    g = b.build(b.op("quantize_linear", x, b.const(np.array(0.05, np.float32), name="s"),
                     b.const(np.array(3, np.int8), name="z"), dtype="int8"))
    cfg, src = _kernel(g)
    assert cfg["vector"] and cfg["inner"] == 8
    assert _loads(src, "x") == (1, 0)
    out = re.search(r"signed char\* __restrict__ (out_\w+)_ptr", src).group(1)
    assert len(re.findall(rf"\*\(int2\*\)\({out}_ptr \+", src)) == 1
    v = (np.random.default_rng(0).standard_normal((2, 7, 7, 64)) * 8).astype(np.float16)
    got = tefuse.build(g, "llvm").run(x=v)[0]
    want = np.clip(np.rint(v.astype(np.float32) / np.float32(0.05)) + 3, -128, 127).astype(np.int8)
    np.testing.assert_array_equal(got, want)


def test_a_last_axis_too_long_to_evaluate_takes_no_vectors():
    """A tensor past 2^31 elements whose last axis is 2^30 + 8 long: the lanes of a loop that long
    are not evaluated (schedules/gpu/lanes.MAX_EVALUATED), so its kernel stores no vector, over
    64-bit indices, built without evaluating gigabytes of indices."""
    b = GraphBuilder()
    x = b.input("x", (2, 2**30 + 8), "float16")
    (k,) = tefuse.build(b.build(b.relu(b.add(x, b.const(np.float16(1.0))))), "cuda:sm_90", cache=None).kernels
    src = k.source("cuda")
    src = src[src.index('extern "C" __global__'):]
    out = re.search(r"half\* __restrict__ (out_\w+)_ptr", src).group(1)
    vec, scalar = _stores(src, out)
    assert vec == 0 and scalar > 0 and "int64_t" in src
