"""insert_zeros and conv_transpose_weight, and the conv2d over them that is a transposed
convolution: llvm vs a numpy scatter reference; the CUDA build is one conv kernel."""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tests.reference import assert_close, run_op


def conv_transpose2d(x, w, strides, pads, dilation=(1, 1), groups=1, output_padding=(0, 0)):
    """float64 reference by definition: every input pixel scatters its kernel-weighted copy."""
    n, c, h, wd = x.shape
    _, mg, kh, kw = w.shape
    (sh, sw), (dh, dw) = strides, dilation
    t, l, b, r = pads
    full = np.zeros((n, mg * groups, (h - 1) * sh + (kh - 1) * dh + 1 + output_padding[0],
                     (wd - 1) * sw + (kw - 1) * dw + 1 + output_padding[1]))
    cg = c // groups
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg].astype(np.float64)
        ws = w[g * cg:(g + 1) * cg].astype(np.float64)
        for i in range(kh):
            for j in range(kw):
                contrib = np.einsum("nchw,cm->nmhw", xs, ws[:, :, i, j])
                full[:, g * mg:(g + 1) * mg, i * dh:i * dh + (h - 1) * sh + 1:sh,
                     j * dw:j * dw + (wd - 1) * sw + 1:sw] += contrib
    return full[:, :, t:full.shape[2] - b, l:full.shape[3] - r]


def transposed_conv_graph(x_shape, w, strides, pads, dilation=(1, 1), groups=1, dtype="float32"):
    """The lowering the ONNX converter emits (all pads >= 0 here: conv2d pads, no crop)."""
    kh, kw = w.shape[2:]
    lo = [d * (k - 1) - p for d, k, p in zip(dilation, (kh, kw), pads[:2])]
    hi = [d * (k - 1) - p for d, k, p in zip(dilation, (kh, kw), pads[2:])]
    b = tefuse.GraphBuilder()
    x = b.input("x", x_shape, dtype)
    holes = b.op("insert_zeros", x, strides=(1, 1, *strides), pads=(0,) * 8)
    wc = b.op("conv_transpose_weight", b.input("w", w.shape, dtype), groups=groups)
    y = b.op("conv2d", holes, wc, strides=1, padding=(lo[0], lo[1], hi[0], hi[1]), dilation=dilation, groups=groups)
    return b.build(y)


@pytest.mark.parametrize("strides,pads", [((2, 2), (0,) * 8), ((3, 1), (0, 0, 1, 2, 0, 0, 2, 1)),
                                          ((1, 2), (0, 0, -1, 0, 0, 0, 0, -2)), ((2, 3), (0, 0, -1, 1, 0, 0, 2, -1))])
def test_insert_zeros(rng, strides, pads):
    x = rng.standard_normal((2, 3, 4, 5)).astype("float32")
    holed = np.zeros((2, 3, 3 * strides[0] + 1, 4 * strides[1] + 1), "float32")
    holed[:, :, ::strides[0], ::strides[1]] = x
    b, e = pads[2:4], pads[6:8]
    want = np.pad(holed, [(0, 0), (0, 0), (max(b[0], 0), max(e[0], 0)), (max(b[1], 0), max(e[1], 0))])
    want = want[:, :, -min(b[0], 0):want.shape[2] + min(e[0], 0), -min(b[1], 0):want.shape[3] + min(e[1], 0)]
    np.testing.assert_array_equal(run_op("insert_zeros", x, strides=(1, 1, *strides), pads=pads), want)


@pytest.mark.parametrize("groups", [1, 2, 4])
def test_conv_transpose_weight(rng, groups):
    w = rng.standard_normal((4, 3, 2, 3)).astype("float32")
    want = w.reshape(groups, 4 // groups, 3, 2, 3).swapaxes(1, 2).reshape(3 * groups, 4 // groups, 2, 3)
    np.testing.assert_array_equal(run_op("conv_transpose_weight", w, groups=groups), want[..., ::-1, ::-1])


CASES = [((2, 2), (1, 1, 1, 1), (1, 1), 1), ((3, 2), (0, 1, 2, 0), (1, 1), 1), ((2, 2), (1, 0, 1, 2), (2, 2), 1),
         ((2, 1), (0, 0, 0, 0), (1, 1), 2), ((1, 1), (1, 1, 1, 1), (1, 1), 4)]


@pytest.mark.parametrize("strides,pads,dilation,groups", CASES)
def test_conv2d_over_the_views_is_the_transposed_conv(rng, strides, pads, dilation, groups):
    x = rng.standard_normal((2, 4, 5, 4)).astype("float32")
    w = rng.standard_normal((4, 3, 3, 3)).astype("float32")
    g = transposed_conv_graph(x.shape, w, strides, pads, dilation, groups)
    cg = tefuse.build(g, "llvm")
    assert cg.num_kernels == 1, "both views are computed inside the conv's operand reads"
    y = cg.run(x, w)[0]
    assert_close(y, conv_transpose2d(x, w, strides, pads, dilation, groups), rtol=1e-5, atol=1e-5)


def test_float16_accumulates_in_float32(rng):
    x = rng.standard_normal((1, 8, 6, 6)).astype("float16")
    w = rng.standard_normal((8, 4, 3, 3)).astype("float16")
    y = tefuse.build(transposed_conv_graph(x.shape, w, (2, 2), (1, 1, 1, 1), dtype="float16"), "llvm").run(x, w)[0]
    assert y.dtype == np.float16
    assert_close(y, conv_transpose2d(x, w, (2, 2), (1, 1, 1, 1)), "float16", rtol=1e-2, atol=2e-2)


def _cuda_kernel(dtype: str):
    b = tefuse.GraphBuilder()
    x = b.input("x", (1, 32, 8, 8), dtype)
    holes = b.op("insert_zeros", x, strides=(1, 1, 2, 2), pads=(0,) * 8)
    wc = b.op("conv_transpose_weight", b.const(np.ones((32, 32, 4, 4), dtype)), groups=1)
    (k,) = tefuse.build(b.build(b.op("conv2d", holes, wc, strides=1, padding=2)), "cuda").kernels
    assert sorted(n.op for n in k.group.prologue) == ["conv_transpose_weight", "insert_zeros"]
    return k


def test_builds_for_cuda_as_one_conv_kernel():
    """Compile only: the zero-inserted input and the flipped weight are the conv template's
    operand reads."""
    assert _cuda_kernel("float32").template == "conv2d_direct"


@pytest.mark.slow  # the tensor-core schedule takes a minute to apply on two cores
def test_builds_for_cuda_as_one_tensor_core_conv_kernel():
    assert _cuda_kernel("float16").template == "tensorcore_gemm"


@pytest.mark.parametrize("attrs,match", [(dict(strides=(1, 2), pads=(0,) * 4), "strides must hold rank=3"),
                                         (dict(strides=(1, 0, 1), pads=(0,) * 6), "positive ints"),
                                         (dict(strides=(1, 1, 1), pads=(0, 0, -3, 0, 0, -3)), "crop all of shape")])
def test_insert_zeros_refuses_bad_attributes(attrs, match):
    with pytest.raises(tefuse.GraphError, match=match):
        run_op("insert_zeros", np.zeros((1, 2, 3), "float32"), **attrs)


def test_conv_transpose_weight_refuses_groups_that_do_not_divide():
    with pytest.raises(tefuse.GraphError, match="groups=3 must be a positive integer dividing its 4 input channels"):
        run_op("conv_transpose_weight", np.zeros((4, 2, 3, 3), "float32"), groups=3)
