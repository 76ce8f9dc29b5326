"""The weight-layout pass: fp16/bf16 (and tf32) matmuls by a constant 2-D weight read it [N, K]."""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse.errors import GraphError
from tefuse.graph import GraphBuilder
from tefuse.graph.weights import nk_gemm_weights


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
    got = nk_gemm_weights(g)
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
    assert nk_gemm_weights(g) is g


def test_trans_b_needs_a_2d_weight():
    b = GraphBuilder()
    x, w = b.input("x", (2, 8, 16), "float16"), b.input("w", (2, 8, 16), "float16")
    with pytest.raises(GraphError, match=r"trans_b.*2-D b\[N, K\]"):
        b.matmul(x, w, trans_b=True)


def _nhwc_conv(c, k=64, dtype="float16", groups=1, r=3, rng=None):
    rng = rng or np.random.default_rng(0)
    b = GraphBuilder()
    x = b.input("x", (2, 12, 12, c), dtype)
    w = b.const((rng.standard_normal((r, r, c // groups, k)) * 0.1).astype(dtype), name="w")
    return b.build(b.relu(b.conv2d(x, w, strides=2, padding=r // 2, groups=groups, layout="NHWC")))


@pytest.mark.parametrize("c", [64, 3])
def test_nhwc_convs_read_ohwi_weights_where_asked_and_compute_the_same(c):
    """convs=True (Hopper): the HWIO constant becomes OHWI, an image's 3 channels are padded to
    8 (input and weight); the llvm result is unchanged. Without convs=True nothing changes."""
    rng = np.random.default_rng(2)
    g = _nhwc_conv(c, rng=rng)
    assert nk_gemm_weights(g) is g
    got = nk_gemm_weights(g, convs=True)
    (conv,) = [n for n in got.nodes if n.op == "conv2d"]
    assert conv.attrs["weight_layout"] == "OHWI" and conv.inputs[1].shape == (64, 3, 3, max(c, 8))
    assert (conv.inputs[0].op == "pad") == (c == 3)
    x = rng.standard_normal((2, 12, 12, c)).astype("float16")
    want = tefuse.build(g, "llvm").run(x=x)[0].astype(np.float32)
    out = tefuse.build(got, "llvm").run(x=x)[0].astype(np.float32)
    assert np.abs(out - want).max() <= 1e-2 * np.abs(want).max()


@pytest.mark.parametrize("c", [64, 3])
def test_tf32_convs_read_ohwi_weights_and_an_image_is_padded_to_4_channels(c):
    """float32 convs built with math='tf32' (Hopper's tf32 wgmma reads B K-major too): OHWI,
    an image's 3 channels padded to 4 (16 bytes of float32); the llvm result is unchanged."""
    from tefuse.graph.precision import convert_precision

    rng = np.random.default_rng(5)
    g = convert_precision(_nhwc_conv(c, dtype="float32", rng=rng), "tf32")
    got = nk_gemm_weights(g, convs=True)
    (conv,) = [n for n in got.nodes if n.op == "conv2d"]
    assert conv.attrs["weight_layout"] == "OHWI" and conv.attrs["math"] == "tf32"
    assert conv.inputs[1].shape == (64, 3, 3, max(c, 4)) and (conv.inputs[0].op == "pad") == (c == 3)
    x = rng.standard_normal((2, 12, 12, c)).astype("float32")
    want = tefuse.build(g, "llvm").run(x=x)[0]
    np.testing.assert_allclose(tefuse.build(got, "llvm").run(x=x)[0], want, rtol=1e-5, atol=1e-5)


def test_tf32_matmuls_read_one_transposed_copy_of_a_shared_weight():
    from tefuse.graph.precision import convert_precision

    g, w = _linear_pair("float32", np.random.default_rng(6))
    mms = [n for n in nk_gemm_weights(convert_precision(g, "tf32")).nodes if n.op == "matmul"]
    assert [bool(n.attrs.get("trans_b")) for n in mms] == [True, True, False]
    np.testing.assert_array_equal(mms[0].inputs[1].value, w.T)


@pytest.mark.parametrize("kw", [dict(c=12), dict(c=64, dtype="float32"), dict(c=64, groups=2)])
def test_convs_wgmma_cannot_stream_keep_hwio(kw):
    """12 channels (not whole 16-byte vectors, not an image), float32 (not tf32), grouped: left
    alone."""
    g = _nhwc_conv(**kw)
    assert nk_gemm_weights(g, convs=True) is g
