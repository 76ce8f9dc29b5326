"""max/avg pooling (padding, strides, dilation, ceil_mode, count_include_pad), global pools, lrn."""
from __future__ import annotations

import numpy as np
import pytest

from tests.reference import assert_close, lrn, pool2d, run_op

# (h, w, kernel, strides, padding (t, l, b, r), dilation, ceil_mode)
POOLS = [
    pytest.param(8, 8, (2, 2), (2, 2), (0, 0, 0, 0), (1, 1), False, id="k2s2"),
    pytest.param(7, 7, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), False, id="k3s2p1"),
    pytest.param(7, 7, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), True, id="k3s2p1_ceil"),
    pytest.param(8, 8, (3, 3), (2, 2), (0, 0, 0, 0), (1, 1), True, id="k3s2_ceil_partial"),
    pytest.param(6, 9, (2, 3), (1, 2), (0, 1, 1, 0), (1, 1), False, id="asym_pad"),
    pytest.param(9, 9, (3, 3), (1, 1), (2, 2, 2, 2), (2, 2), False, id="dilated"),
    pytest.param(5, 5, (3, 3), (3, 3), (1, 1, 1, 1), (1, 1), True, id="ceil_k3s3"),
    pytest.param(6, 6, (3, 3), (2, 2), (1, 0, 1, 0), (1, 1), True, id="ceil_asym"),
]


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("h,w,kernel,strides,padding,dilation,ceil_mode", POOLS)
def test_max_pool2d(rng, layout, h, w, kernel, strides, padding, dilation, ceil_mode):
    shape = (2, 3, h, w) if layout == "NCHW" else (2, h, w, 3)
    x = (rng.standard_normal(shape) - 3).astype("float32")  # negative: padding must never win
    y = run_op("max_pool2d", x, kernel=kernel, strides=strides, padding=padding, dilation=dilation,
               ceil_mode=ceil_mode, layout=layout)
    ref = pool2d(x, "max", kernel, strides, padding, ceil_mode, layout=layout, dilation=dilation)
    assert_close(y, ref, rtol=0, atol=0)


@pytest.mark.parametrize("count_include_pad", [False, True])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("h,w,kernel,strides,padding,dilation,ceil_mode", POOLS)
def test_avg_pool2d(rng, layout, count_include_pad, h, w, kernel, strides, padding, dilation, ceil_mode):
    shape = (1, 3, h, w) if layout == "NCHW" else (1, h, w, 3)
    x = rng.standard_normal(shape).astype("float32")
    y = run_op("avg_pool2d", x, kernel=kernel, strides=strides, padding=padding, dilation=dilation,
               ceil_mode=ceil_mode, count_include_pad=count_include_pad, layout=layout)
    ref = pool2d(x, "avg", kernel, strides, padding, ceil_mode, count_include_pad, layout, dilation)
    assert_close(y, ref)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool_float16(rng, kind):
    x = rng.standard_normal((1, 4, 6, 6)).astype("float16")
    y = run_op(f"{kind}_pool2d", x, kernel=3, strides=2, padding=1)
    assert y.dtype == np.float16
    assert_close(y, pool2d(x, kind, (3, 3), (2, 2), (1, 1, 1, 1)), "float16")


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_global_pool(rng, kind, layout):
    x = rng.standard_normal((2, 3, 5, 4)).astype("float32")
    xin = x if layout == "NCHW" else x.transpose(0, 2, 3, 1)
    y = run_op(f"global_{kind}_pool2d", xin, layout=layout)
    ref = (x.max if kind == "max" else x.astype(np.float64).mean)(axis=(2, 3), keepdims=True)
    if layout == "NHWC":
        ref = ref.transpose(0, 2, 3, 1)
    assert_close(y, ref)


@pytest.mark.parametrize("size", [1, 3, 4, 5])
@pytest.mark.parametrize("axis", [1, 3])
def test_lrn(rng, size, axis):
    x = rng.standard_normal((2, 6, 3, 3)).astype("float32")
    if axis == 3:
        x = x.transpose(0, 2, 3, 1).copy()
    attrs = dict(size=size, alpha=1e-2, beta=0.75, bias=2.0, axis=axis)
    assert_close(run_op("lrn", x, **attrs), lrn(x, **attrs))
