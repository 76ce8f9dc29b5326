"""ops: conv2d(split_k=S) gives S float32 partial sums over channel slices, split_sum adds them up;
together they compute the conv (llvm, against numpy), and bad attributes are refused by name."""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse.errors import GraphError
from tefuse.graph import GraphBuilder

from ..reference import conv2d


def _nhwc_conv(dtype, split, weight_layout="HWIO", n=2, hw=5, c=16, k=8, r=3):
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x = b.input("x", (n, hw, hw, c), dtype)
    wshape = (r, r, c, k) if weight_layout == "HWIO" else (k, r, r, c)
    w = b.input("w", wshape, dtype)
    attrs = dict(padding=r // 2, layout="NHWC")
    if weight_layout != "HWIO":
        attrs["weight_layout"] = weight_layout
    if split > 1:
        part = b.conv2d(x, w, split_k=split, **attrs)
        y = b.split_sum(part, dtype=dtype)
    else:
        y = b.conv2d(x, w, **attrs)
    feed = {"x": rng.standard_normal((n, hw, hw, c)).astype(dtype),
            "w": (rng.standard_normal(wshape) / np.sqrt(c * r * r)).astype(dtype)}
    return b.build(y), feed


@pytest.mark.parametrize("dtype", ["float16", "float32"])
@pytest.mark.parametrize("weight_layout", ["HWIO", "OHWI"])
@pytest.mark.parametrize("split", [2, 4])
def test_split_partials_sum_to_the_conv(dtype, weight_layout, split):
    graph, feed = _nhwc_conv(dtype, split, weight_layout)
    part = graph.outputs[0].inputs[0]
    assert part.shape == (split, 2, 5, 5, 8) and part.dtype == "float32"
    got = tefuse.build(graph, "llvm").run(**feed)[0]
    assert got.dtype == np.dtype(dtype) and got.shape == (2, 5, 5, 8)
    hwio = feed["w"] if weight_layout == "HWIO" else feed["w"].transpose(1, 2, 3, 0)
    want = conv2d(feed["x"], hwio, padding=1, layout="NHWC")
    tol = 2e-3 if dtype == "float16" else 1e-5
    assert np.abs(got.astype(np.float64) - want).max() <= tol * np.abs(want).max()


@pytest.mark.parametrize("attrs,what", [
    (dict(split_k=3, layout="NHWC"), "split_k=3"),  # 16 channels: 3 does not divide them
    (dict(split_k=2, layout="NCHW"), "NHWC, groups=1 only"),
    (dict(split_k=0, layout="NHWC"), "positive integer"),
])
def test_bad_split_is_refused_naming_the_node(attrs, what):
    b = GraphBuilder()
    c = 16
    x = b.input("x", (1, 4, 4, c) if attrs["layout"] == "NHWC" else (1, c, 4, 4), "float16")
    w = b.input("w", (3, 3, c, 8) if attrs["layout"] == "NHWC" else (8, c, 3, 3), "float16")
    with pytest.raises(GraphError, match=what) as e:
        b.conv2d(x, w, name="c1", **attrs)
    assert "'c1'" in str(e.value)


def test_split_sum_takes_float32_partials_or_an_int32_sums_own():
    b = GraphBuilder()
    with pytest.raises(GraphError, match="float32 partials"):
        b.split_sum(b.input("p", (2, 4, 4), "float16"), dtype="float16")
    with pytest.raises(GraphError, match="float32 partials"):
        b.split_sum(b.input("i", (2, 4, 4), "int32"), dtype="float32")
    with pytest.raises(GraphError, match="int32 partials"):
        b.split_sum(b.input("f", (2, 4, 4), "float32"), dtype="int32")
    with pytest.raises(GraphError, match="dtype must be"):
        b.split_sum(b.input("q", (2, 4, 4), "float32"), dtype="int8")


def test_int8_partials_are_int32_and_sum_exactly():
    """An int8 conv split in 4: int32 partial sums, added as int32 into the unsplit conv's sums
    (numpy's integer conv, element for element)."""
    rng = np.random.default_rng(5)
    b = GraphBuilder()
    x = b.input("x", (1, 5, 5, 64), "int8")
    w = b.input("w", (3, 3, 64, 16), "int8")
    part = b.conv2d(x, w, padding=1, layout="NHWC", split_k=4, out_dtype="int32")
    y = b.split_sum(part, dtype="int32")
    assert part.dtype == "int32" and part.shape == (4, 1, 5, 5, 16)
    xv = rng.integers(-128, 128, (1, 5, 5, 64)).astype("int8")
    wv = rng.integers(-128, 128, (3, 3, 64, 16)).astype("int8")
    (got,) = tefuse.build(b.build(y), "llvm").run(x=xv, w=wv)
    want = conv2d(xv.transpose(0, 3, 1, 2).astype(np.int64), wv.transpose(3, 2, 0, 1).astype(np.int64), padding=1)
    assert got.dtype == np.int32 and np.array_equal(got, want.transpose(0, 2, 3, 1))


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_split_linear_partials_sum_to_the_product(dtype):
    rng = np.random.default_rng(3)
    b = GraphBuilder()
    x, w = b.input("x", (2, 5, 64), dtype), b.input("w", (24, 64), dtype)
    part = b.matmul(x, w, trans_b=True, split_k=4)
    graph = b.build(b.split_sum(part, dtype=dtype))
    assert part.shape == (4, 2, 5, 24) and part.dtype == "float32"
    feed = {"x": rng.standard_normal((2, 5, 64)).astype(dtype), "w": rng.standard_normal((24, 64)).astype(dtype)}
    got = tefuse.build(graph, "llvm").run(**feed)[0].astype(np.float64)
    want = feed["x"].astype(np.float64) @ feed["w"].astype(np.float64).T
    assert np.abs(got - want).max() <= (2e-3 if dtype == "float16" else 1e-5) * np.abs(want).max()


@pytest.mark.parametrize("attrs,what", [
    (dict(trans_b=True, split_k=3), "dividing K=64"),
    (dict(trans_b=True, split_k=2, alpha=0.5), "alpha"),
    (dict(split_k=2), "needs trans_b"),
])
def test_bad_linear_split_is_refused(attrs, what):
    b = GraphBuilder()
    x = b.input("x", (5, 64), "float16")
    w = b.input("w", (24, 64) if attrs.get("trans_b") else (64, 24), "float16")
    with pytest.raises(GraphError, match=what):
        b.matmul(x, w, name="fc", **attrs)


def test_int8_linear_partials_are_int32_and_sum_exactly():
    rng = np.random.default_rng(6)
    b = GraphBuilder()
    x = b.input("x", (1, 40, 256), "int8")
    w = b.input("w", (32, 256), "int8")
    part = b.matmul(x, w, trans_b=True, split_k=4, out_dtype="int32")
    assert part.dtype == "int32" and part.shape == (4, 1, 40, 32)
    y = b.split_sum(part, dtype="int32")
    xv = rng.integers(-128, 128, (1, 40, 256)).astype("int8")
    wv = rng.integers(-128, 128, (32, 256)).astype("int8")
    (got,) = tefuse.build(b.build(y), "llvm").run(x=xv, w=wv)
    assert got.dtype == np.int32 and np.array_equal(got, xv.astype(np.int64) @ wv.T.astype(np.int64))
