"""The weight-layout pass: fp16/bf16 (and tf32) matmuls by a constant 2-D weight read it [N, K]."""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse.errors import GraphError
from tefuse.graph import GraphBuilder
from tefuse.graph.weights import (input_conv_candidate, nk_gemm_weights, ohwi_weight_inputs, padded_channels,
                                  row_taps, to_layout)
from tefuse.schedules.cuda.gemm.tiles import MIN_MN


def _linear_pair(dtype, rng):
    """Two matmuls sharing one [K, N] weight, and one by a computed B (left alone)."""
    w = (rng.standard_normal((64, 96)) * 0.1).astype(dtype)
    b = GraphBuilder()
    x = b.input("x", (2, 197, 64), dtype)
    wc = b.const(w, name="w")
    y = b.add(b.matmul(x, wc), b.matmul(b.relu(x), wc))
    z = b.matmul(y, b.transpose(y, axes=(0, 2, 1)))  # B computed: stays [K, N]
    return b.build(z), w


def test_fp16_matmuls_read_one_transposed_copy_of_a_shared_weight():
    rng = np.random.default_rng(0)
    g, w = _linear_pair("float16", rng)
    got = nk_gemm_weights(g, min_mn=MIN_MN)
    mms = [n for n in got.nodes if n.op == "matmul"]
    assert [bool(n.attrs.get("trans_b")) for n in mms] == [True, True, False]
    assert mms[0].inputs[1] is mms[1].inputs[1], "the shared weight was copied twice"
    np.testing.assert_array_equal(mms[0].inputs[1].value, w.T)
    x = rng.standard_normal((2, 197, 64)).astype("float16")
    want = tefuse.build(g, "llvm").run(x=x)[0].astype(np.float32)
    out = tefuse.build(got, "llvm").run(x=x)[0].astype(np.float32)
    assert np.abs(out - want).max() <= 1e-2 * np.abs(want).max()


def test_float32_matmuls_are_left_alone():
    g, _ = _linear_pair("float32", np.random.default_rng(1))
    assert nk_gemm_weights(g, min_mn=MIN_MN) is g


def test_trans_b_needs_a_2d_weight():
    b = GraphBuilder()
    x, w = b.input("x", (2, 8, 16), "float16"), b.input("w", (2, 8, 16), "float16")
    with pytest.raises(GraphError, match=r"trans_b.*2-D b\[N, K\]"):
        b.matmul(x, w, trans_b=True)


def _producers(x):
    """The op chain feeding x, nearest first, up to the graph input."""
    out = []
    while x.is_op:
        out.append(x.op)
        x = x.inputs[0]
    return out


def _nhwc_conv(c, k=64, dtype="float16", groups=1, r=3, rng=None):
    rng = rng or np.random.default_rng(0)
    b = GraphBuilder()
    x = b.input("x", (2, 12, 12, c), dtype)
    w = b.const((rng.standard_normal((r, r, c // groups, k)) * 0.1).astype(dtype), name="w")
    return b.build(b.relu(b.conv2d(x, w, strides=2, padding=r // 2, groups=groups, layout="NHWC")))


@pytest.mark.parametrize("c", [64, 3])
def test_nhwc_convs_read_ohwi_weights_where_asked_and_compute_the_same(c):
    """convs=True (Hopper): the HWIO constant becomes OHWI, an image's 3 channels are padded to
    4 (input and weight: 8 bytes a pixel); the llvm result is unchanged. Without convs=True nothing changes."""
    rng = np.random.default_rng(2)
    g = _nhwc_conv(c, rng=rng)
    assert nk_gemm_weights(g, min_mn=MIN_MN) is g
    got = nk_gemm_weights(g, convs=True, min_mn=MIN_MN)
    (conv,) = [n for n in got.nodes if n.op == "conv2d"]
    # an image's 3x3 stride-2 kernel rows read pixel pairs (pair_pixels): 2 taps of 8 channels
    assert conv.attrs["weight_layout"] == "OHWI" and conv.inputs[1].shape == ((64, 3, 3, 64) if c == 64 else (64, 3, 2, 8))
    assert _producers(conv.inputs[0]) == ([] if c == 64 else ["reshape", "pad"])
    x = rng.standard_normal((2, 12, 12, c)).astype("float16")
    want = tefuse.build(g, "llvm").run(x=x)[0].astype(np.float32)
    out = tefuse.build(got, "llvm").run(x=x)[0].astype(np.float32)
    assert np.abs(out - want).max() <= 1e-2 * np.abs(want).max()


def _int8_products(c, rng):
    """An int8 NHWC conv over `c` channels into int32 (a QDQ anchor) and an int8 matmul by a [K, N]
    constant."""
    b = GraphBuilder()
    x = b.input("x", (2, 12, 12, c), "int8")
    w = b.const(rng.integers(-128, 128, (3, 3, c, 64)).astype(np.int8), name="w")
    y = b.op("conv2d", b.op("pad", x, pads=(0, 1, 1, 0, 0, 1, 1, 0), value=-5.0), w, layout="NHWC",
             out_dtype="int32")
    t = b.input("t", (70, 96), "int8")
    z = b.op("matmul", t, b.const(rng.integers(-128, 128, (96, 80)).astype(np.int8), name="m"), out_dtype="int32")
    return b.build([y, z])


@pytest.mark.parametrize("c", [32, 3])
def test_int8_products_read_nk_weights_where_asked_and_compute_the_same_integers(c):
    """int8=True (mma.sync): the conv's HWIO constant becomes OHWI where its channels are whole
    16-byte copies (an image's 3 stay HWIO), the matmul's [K, N] constant [N, K]; exact on llvm.
    The float rule (convs=True) alone leaves int8 products alone."""
    rng = np.random.default_rng(3)
    g = _int8_products(c, rng)
    assert nk_gemm_weights(g, convs=True, min_mn=MIN_MN) is g
    got = nk_gemm_weights(g, int8=True, min_mn=MIN_MN)
    (conv,) = [n for n in got.nodes if n.op == "conv2d"]
    (mm,) = [n for n in got.nodes if n.op == "matmul"]
    assert conv.attrs.get("weight_layout") == ("OHWI" if c == 32 else None)
    assert mm.attrs.get("trans_b") and mm.inputs[1].shape == (80, 96)
    feed = {"x": rng.integers(-128, 128, (2, 12, 12, c)).astype(np.int8),
            "t": rng.integers(-128, 128, (70, 96)).astype(np.int8)}
    for want, out in zip(tefuse.build(g, "llvm").run(**feed), tefuse.build(got, "llvm").run(**feed)):
        np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("c", [64, 3])
def test_tf32_convs_read_ohwi_weights_and_an_image_is_padded_to_4_channels(c):
    """float32 convs built with math='tf32' (Hopper's tf32 wgmma reads B K-major too): OHWI,
    an image's 3 channels padded to 4 (16 bytes of float32); the llvm result is unchanged."""
    from tefuse.graph.precision import convert_precision

    rng = np.random.default_rng(5)
    g = convert_precision(_nhwc_conv(c, dtype="float32", rng=rng), "tf32")
    got = nk_gemm_weights(g, convs=True, min_mn=MIN_MN)
    (conv,) = [n for n in got.nodes if n.op == "conv2d"]
    assert conv.attrs["weight_layout"] == "OHWI" and conv.attrs["math"] == "tf32"
    assert conv.inputs[1].shape == (64, 3, 3 if c == 64 else 4, max(c, 4)) and (conv.inputs[0].op == "pad") == (c == 3)
    x = rng.standard_normal((2, 12, 12, c)).astype("float32")
    want = tefuse.build(g, "llvm").run(x=x)[0]
    np.testing.assert_allclose(tefuse.build(got, "llvm").run(x=x)[0], want, rtol=1e-5, atol=1e-5)


def test_tf32_matmuls_read_one_transposed_copy_of_a_shared_weight():
    from tefuse.graph.precision import convert_precision

    g, w = _linear_pair("float32", np.random.default_rng(6))
    mms = [n for n in nk_gemm_weights(convert_precision(g, "tf32"), min_mn=MIN_MN).nodes if n.op == "matmul"]
    assert [bool(n.attrs.get("trans_b")) for n in mms] == [True, True, False]
    np.testing.assert_array_equal(mms[0].inputs[1].value, w.T)


@pytest.mark.parametrize("kw", [dict(c=12), dict(c=64, dtype="float32"), dict(c=64, groups=2)])
def test_convs_wgmma_cannot_stream_keep_hwio(kw):
    """12 channels (not whole 16-byte vectors, not an image), float32 (not tf32), grouped: left
    alone."""
    g = _nhwc_conv(**kw)
    assert nk_gemm_weights(g, convs=True, min_mn=MIN_MN) is g


@pytest.mark.parametrize("kh,kw,c,itemsize,want", [
    (7, 7, 4, 2, 8),    # the stem in fp16 (3 channels padded to 4): 196 -> 224 deep, 4 steps of 64
    (7, 7, 8, 2, 8),    # with 8 channels: 392 -> 448 deep, 7 steps of 64 either way
    (7, 7, 4, 4, 8),    # its tf32 form: 4 channels, steps of 32
    (3, 3, 4, 2, 4),    # MobileNet's stem in fp16: 36 -> 48, 1 step
    (3, 3, 8, 2, 4),    # with 8 channels: 72 -> 96, 2 steps either way
    (3, 3, 16, 2, 3),   # two chunks a pixel: 4/3 the products for the same copy, kept
    (3, 3, 32, 2, 3),
    (3, 3, 64, 2, 3),   # whole steps a tap already
    (1, 1, 8, 2, 1),
    (1, 7, 8, 2, 8),
    (3, 3, 12, 2, 3),   # 12 channels: no power of two
])
def test_row_taps_widens_kernel_rows_only_where_no_step_is_added(kh, kw, c, itemsize, want):
    assert row_taps(kh, kw, c, itemsize) == want
    assert row_taps(kh, kw, c, itemsize, dilation=2) == kw


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_a_7x7_stem_computes_the_same_with_its_rows_widened(dtype):
    """ResNet's stem (3 channels, 7x7, stride 2, pad 3): in fp16 its pixels padded to 4 channels
    and read in pairs (pair_pixels: 7x4 taps of 8 channels, stride (2, 1)); in float32 padded to
    4 channels and 8 taps a row, one more pixel of padding on the right; the llvm result is unchanged."""
    from tefuse.graph.precision import convert_precision

    rng = np.random.default_rng(7)
    b = GraphBuilder()
    x = b.input("x", (2, 30, 30, 3), dtype)
    w = b.const((rng.standard_normal((7, 7, 3, 32)) * 0.1).astype(dtype), name="w")
    g = b.build(b.relu(b.conv2d(x, w, strides=2, padding=3, layout="NHWC")))
    if dtype == "float32":
        g = convert_precision(g, "tf32")
    got = nk_gemm_weights(g, convs=True, min_mn=MIN_MN)
    (conv,) = [n for n in got.nodes if n.op == "conv2d"]
    if dtype == "float16":
        assert conv.inputs[1].shape == (32, 7, 4, 8) and conv.geometry.stride == (2, 1)
        assert conv.geometry.padding == (3, 2, 3, 1) and conv.shape == (2, 15, 15, 32)
        np.testing.assert_array_equal(conv.inputs[1].value[:, :, 0, :4], 0)  # the shift: a zero tap first
    else:
        assert conv.inputs[1].shape == (32, 7, 8, 4)
        assert conv.geometry.padding == (3, 3, 3, 4) and conv.shape == (2, 15, 15, 32)
        np.testing.assert_array_equal(conv.inputs[1].value[:, :, 7], 0)
    xv = rng.standard_normal((2, 30, 30, 3)).astype(dtype)
    want = tefuse.build(g, "llvm").run(x=xv)[0].astype(np.float32)
    out = tefuse.build(got, "llvm").run(x=xv)[0].astype(np.float32)
    assert np.abs(out - want).max() <= (1e-2 if dtype == "float16" else 1e-5) * np.abs(want).max()


@pytest.mark.parametrize("c,lanes,want", [
    (3, 8, 4),    # an fp16 image: 8 bytes a pixel, not 16 (the stem's reduction 224 deep, not 448)
    (3, 4, 4),    # float32 (tf32): 16 bytes a pixel, as before
    (1, 8, 4),    # one channel: still one 8-byte copy a pixel
    (1, 4, 2),
    (5, 8, 8),
    (8, 8, 8),
    (64, 8, 64),
])
def test_padded_channels_gives_a_pixel_a_power_of_two_of_at_least_8_bytes(c, lanes, want):
    assert padded_channels(c, lanes) == want


@pytest.mark.parametrize("hw,r,stride,pad", [
    (30, 7, 2, 3),   # ResNet's stem: a zero tap first (pad 3 is odd), 7x4 taps of 8 channels
    (31, 7, 2, 3),   # odd width: a zero column appended before the pairs
    (32, 3, 2, 1),   # MobileNet's stem: 3x2 taps
    (30, 5, 2, 2),   # even padding: no shift
    (30, 7, 4, 3),   # stride 4 -> 2
    (28, 4, 2, 1),   # pair taps widened by row_taps (3 -> 4)
])
def test_paired_pixels_compute_the_same(hw, r, stride, pad):
    """pair_pixels: an fp16 image conv whose window moves an even number of pixels along W reads
    two 8-byte pixels a 16-byte vector (input viewed [N, H, W/2, 8], the kernel's rows shifted and
    cut into pairs, W stride halved); on llvm the answer is the conv's, to fp16 rounding."""
    rng = np.random.default_rng(hw + r + stride)
    b = GraphBuilder()
    x = b.input("x", (2, hw, hw, 3), "float16")
    w = b.const((rng.standard_normal((r, r, 3, 32)) * 0.1).astype("float16"), name="w")
    g = b.build(b.relu(b.conv2d(x, w, strides=stride, padding=pad, layout="NHWC")))
    got = nk_gemm_weights(g, convs=True, min_mn=MIN_MN)
    (conv,) = [n for n in got.nodes if n.op == "conv2d"]
    assert conv.inputs[0].shape[2:] == ((hw + 1) // 2, 8) and conv.geometry.stride == (stride, stride // 2)
    xv = rng.standard_normal((2, hw, hw, 3)).astype("float16")
    want = tefuse.build(g, "llvm").run(x=xv)[0].astype(np.float32)
    out = tefuse.build(got, "llvm").run(x=xv)[0].astype(np.float32)
    assert out.shape == want.shape and np.abs(out - want).max() <= 1e-3 * np.abs(want).max()


@pytest.mark.parametrize("kw", [dict(stride=1), dict(stride=3), dict(dilation=2)])
def test_pixels_are_not_paired_where_the_window_moves_an_odd_step(kw):
    """Stride 1 or 3 along W (a pair would hold pixels of two windows' different taps), or
    dilated taps: the 8-byte pixels stay one a tap."""
    b = GraphBuilder()
    x = b.input("x", (1, 20, 20, 3), "float16")
    w = b.const(np.ones((3, 3, 3, 16), "float16"), name="w")
    g = b.build(b.conv2d(x, w, strides=kw.get("stride", 1), padding=1, dilation=kw.get("dilation", 1), layout="NHWC"))
    (conv,) = [n for n in nk_gemm_weights(g, convs=True, min_mn=MIN_MN).nodes if n.op == "conv2d"]
    assert conv.inputs[0].shape[-1] == 4 and conv.inputs[0].op == "pad"


def _input_weight_conv(c=16, dtype="float16"):
    b = GraphBuilder()
    x, w = b.input("x", (2, 8, 8, c), dtype), b.input("w", (3, 3, c, 32), dtype)
    return b.build(b.relu(b.conv2d(x, w, padding=1, layout="NHWC")))


def test_a_run_time_conv_weight_declared_ohwi_computes_the_same(rng):
    """ohwi_weight_inputs declares an input weight OHWI (same name) and marks its conv; fed
    `to_layout(w, "HWIO", "OHWI")` the graph computes what the HWIO one does."""
    g = _input_weight_conv(dtype="float32")
    conv = next(n for n in g.nodes if n.op == "conv2d")
    assert input_conv_candidate(conv, MIN_MN) is False  # float32 without tf32: no tensor cores
    got = ohwi_weight_inputs(g, {"w"})
    assert got.node("w").shape == (32, 3, 3, 16) and got.node("w") in got.inputs
    assert next(n for n in got.nodes if n.op == "conv2d").attrs["weight_layout"] == "OHWI"
    x = rng.standard_normal((2, 8, 8, 16)).astype("float32")
    w = rng.standard_normal((3, 3, 16, 32)).astype("float32")
    want = tefuse.build(g, "llvm").run(x=x, w=w)[0]
    ohwi = to_layout(w, "HWIO", "OHWI")
    assert ohwi.flags.c_contiguous and np.array_equal(to_layout(ohwi, "OHWI", "HWIO"), w)
    np.testing.assert_allclose(tefuse.build(got, "llvm").run(x=x, w=ohwi)[0], want, rtol=1e-5, atol=1e-5)


def test_input_conv_candidate_wants_tensor_core_operands_and_whole_channel_copies_or_an_image():
    for c, dtype, want in [(16, "float16", True), (8, "float16", True), (12, "float16", False),
                           (3, "float16", True), (16, "float32", False)]:
        conv = next(n for n in _input_weight_conv(c, dtype).nodes if n.op == "conv2d")
        assert input_conv_candidate(conv, MIN_MN) is want, (c, dtype)


def test_ohwi_weight_inputs_refuses_an_input_read_otherwise():
    b = GraphBuilder()
    x, w = b.input("x", (2, 8, 8, 16), "float16"), b.input("w", (3, 3, 16, 16), "float16")
    y = b.conv2d(x, w, padding=1, layout="NHWC")
    with pytest.raises(GraphError, match="not only a conv's weight"):
        ohwi_weight_inputs(b.build([y, b.relu(w)]), {"w"})


def test_a_form_is_made_from_a_torch_weight_on_its_device_in_its_dtype():
    """A FusionPlan's weight set as a torch tensor keeps its device and dtype (bf16 has no numpy
    type) through the form, with the values the numpy path gives."""
    torch = pytest.importorskip("torch")
    from tefuse.graph.weights import form_weight

    w = np.random.default_rng(0).standard_normal((7, 7, 3, 16)).astype("float32")
    want = form_weight(w, "OHWI:c4:pairs1x4:taps1")
    assert want.shape == (16, 7, 5, 8) and want.flags.c_contiguous
    for dtype in (torch.float32, torch.bfloat16):
        got = form_weight(torch.from_numpy(w).to(dtype), "OHWI:c4:pairs1x4:taps1")
        assert isinstance(got, torch.Tensor) and got.dtype == dtype and got.is_contiguous()
        np.testing.assert_array_equal(got.float().numpy(), torch.from_numpy(want).to(dtype).float().numpy())


def test_a_form_is_converted_to_only_from_the_users_layout():
    from tefuse.graph.grouped import convert_weight

    w = np.ones((3, 3, 3, 8), "float16")
    assert convert_weight(w, "HWIO", "OHWI:c4:taps1").shape == (8, 3, 4, 4)
    for src, dst in [("OHWI:c4:taps1", "HWIO"), ("HWIO:dense2", "OHWI:c4:taps1"), ("HWIO", "OHWI:c4:taps1:dense2")]:
        with pytest.raises(ValueError, match="cannot be converted"):
            convert_weight(w, src, dst)
    with pytest.raises(ValueError, match="unknown conv weight layout 'OHWI:c4:wide'"):
        convert_weight(w, "HWIO", "OHWI:c4:wide")
