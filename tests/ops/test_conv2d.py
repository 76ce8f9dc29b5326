"""conv2d on llvm vs the float64 numpy reference: layouts, strides, padding, dilation, groups."""
from __future__ import annotations

import numpy as np
import pytest

from tests.reference import Const, assert_close, conv2d, run_op

# (n, c, h, w, k, kh, kw, strides, padding, dilation, groups)
CASES = [
    pytest.param(1, 4, 7, 7, 8, 3, 3, 1, 1, 1, 1, id="3x3_s1_p1"),
    pytest.param(2, 3, 8, 8, 5, 3, 3, 2, 1, 1, 1, id="3x3_s2_p1"),
    pytest.param(1, 4, 9, 7, 6, 3, 3, (2, 1), 0, 1, 1, id="s21_nopad"),
    pytest.param(1, 4, 8, 8, 4, 1, 1, 1, 0, 1, 1, id="1x1"),
    pytest.param(1, 3, 8, 9, 4, 3, 2, 1, (1, 0, 2, 1), 1, 1, id="asym_pad_tlbr"),
    pytest.param(1, 3, 7, 7, 4, 3, 3, 2, (0, 1, 1, 0), 1, 1, id="asym_pad_s2"),
    pytest.param(1, 3, 9, 9, 4, 3, 3, 1, (2, 1), 2, 1, id="dilation2_pad_hw"),
    pytest.param(1, 4, 10, 10, 4, 3, 3, 2, 2, (2, 3), 1, id="dilation23_s2"),
    pytest.param(1, 8, 6, 6, 6, 3, 3, 1, 1, 1, 2, id="groups2"),
    pytest.param(2, 6, 6, 6, 9, 3, 3, 1, 1, 1, 3, id="groups3_k9"),
    pytest.param(1, 8, 7, 7, 8, 3, 3, 1, 1, 1, 8, id="depthwise"),
    pytest.param(1, 4, 8, 8, 8, 3, 3, 2, 1, 1, 4, id="depthwise_mult2_s2"),
    pytest.param(1, 6, 9, 9, 6, 5, 5, 1, 2, 1, 6, id="depthwise_5x5"),
]


def _shapes(layout, n, c, h, w, k, kh, kw, groups):
    if layout == "NCHW":
        return (n, c, h, w), (k, c // groups, kh, kw)
    return (n, h, w, c), (kh, kw, c // groups, k)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("n,c,h,w,k,kh,kw,strides,padding,dilation,groups", CASES)
def test_conv2d_float32(rng, layout, n, c, h, w, k, kh, kw, strides, padding, dilation, groups):
    xs, ws = _shapes(layout, n, c, h, w, k, kh, kw, groups)
    x = rng.standard_normal(xs).astype("float32")
    wt = rng.standard_normal(ws).astype("float32")
    attrs = dict(strides=strides, padding=padding, dilation=dilation, groups=groups, layout=layout)
    y = run_op("conv2d", x, Const(wt), **attrs)
    assert_close(y, conv2d(x, wt, **attrs), "float32", rtol=1e-4, atol=1e-4, what="conv2d")


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_conv2d_weight_as_input(rng, layout):
    xs, ws = _shapes(layout, 1, 3, 6, 6, 4, 3, 3, 1)
    x = rng.standard_normal(xs).astype("float32")
    wt = rng.standard_normal(ws).astype("float32")
    y = run_op("conv2d", x, wt, padding=1, layout=layout)
    assert_close(y, conv2d(x, wt, padding=1, layout=layout), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("groups", [1, 2, 8])
def test_conv2d_float16(rng, layout, groups):
    xs, ws = _shapes(layout, 1, 8, 8, 8, 8, 3, 3, groups)
    x = rng.standard_normal(xs).astype("float16")
    wt = (rng.standard_normal(ws) * 0.3).astype("float16")
    y = run_op("conv2d", x, Const(wt), padding=1, groups=groups, layout=layout)
    assert y.dtype == np.float16
    assert_close(y, conv2d(x, wt, padding=1, groups=groups, layout=layout), "float16",
                 rtol=1e-2, atol=2e-2)


def test_conv2d_output_shape():
    from tests.reference import build_op

    g, _ = build_op("conv2d", np.zeros((2, 3, 11, 13), "float32"), Const(np.zeros((5, 3, 3, 2), "float32")),
                    strides=(2, 3), padding=(1, 0, 2, 1), dilation=(1, 2))
    # h: (11 + 1 + 2 - 3) // 2 + 1 = 6; w: (13 + 0 + 1 - 3) // 3 + 1 = 4
    assert g.outputs[0].shape == (2, 5, 6, 4)
