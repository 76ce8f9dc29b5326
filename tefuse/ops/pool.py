"""Pooling (max, avg, global) and LRN: windowed reductions, NCHW or NHWC."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Sequence

from tvm import te, tirx as tir

from ..errors import OpError
from .conv2d import normalize_padding, normalize_pair
from .nanprop import from_key, has_order_key, keyed_reduce, lowest as _lowest, reduce_max
from .registry import OpPattern, register_op
from .value import Value, acc_dtype, lazy, te_compute

_POOL_ATTRS = {"kernel": 1, "strides": 1, "padding": 0, "dilation": 1, "ceil_mode": False,
               "count_include_pad": False, "layout": "NCHW"}


@dataclass(frozen=True)
class PoolGeometry:
    """A pooling anchor (max/avg, global ones with the whole plane as window): `rows` outputs,
    each reducing a `kernel` window of `extent` elements; `innermost` as ReduceGeometry's
    (true for NCHW, whose windows run along W)."""

    layout: str
    kernel: tuple[int, int]
    rows: int
    extent: int
    innermost: bool
    window: ClassVar[bool] = True


@dataclass(frozen=True)
class LrnGeometry:
    """LRN: each output sums the squares of a `size`-wide window along `axis`."""

    axis: int
    size: int
    rows: int
    extent: int
    innermost: bool
    window: ClassVar[bool] = True


def _pool_geometry(in_shapes, out_shape, attrs: dict) -> PoolGeometry:
    layout = attrs["layout"]
    if "kernel" in attrs:
        kernel = normalize_pair(attrs["kernel"], "kernel")
    else:  # global pooling: the whole plane
        ha, wa = (2, 3) if layout == "NCHW" else (1, 2)
        kernel = (in_shapes[0][ha], in_shapes[0][wa])
    return PoolGeometry(layout, kernel, max(1, math.prod(out_shape)), kernel[0] * kernel[1], layout != "NHWC")


def _lrn_geometry(in_shapes, out_shape, attrs: dict) -> LrnGeometry:
    rank = len(in_shapes[0])
    axis, size = int(attrs["axis"]) % rank, int(attrs["size"])
    return LrnGeometry(axis, size, max(1, math.prod(out_shape)), size, axis == rank - 1)


def _hw_axes(layout: str, x: Value, name: str) -> tuple[int, int]:
    if layout not in ("NCHW", "NHWC"):
        raise OpError(f"{name}: layout must be NCHW or NHWC, got {layout!r}")
    if x.ndim != 4:
        raise OpError(f"{name}: expects 4-D input, got {x.shape}")
    return (2, 3) if layout == "NCHW" else (1, 2)


def _out_size(n: int, k: int, s: int, d: int, p0: int, p1: int, ceil: bool) -> int:
    eff = d * (k - 1) + 1
    span = n + p0 + p1 - eff
    o = (-(-span // s) if ceil else span // s) + 1
    if ceil and (o - 1) * s >= n + p0:  # last window must start inside the input or left pad
        o -= 1
    return o


def _pool(kind: str, inputs: Sequence[Value], attrs: dict) -> Value:
    (x,) = inputs
    name = f"{kind}_pool2d"
    ha, wa = _hw_axes(attrs["layout"], x, name)
    kh, kw = normalize_pair(attrs["kernel"], "kernel")
    sh, sw = normalize_pair(attrs["strides"], "strides")
    dh, dw = normalize_pair(attrs["dilation"], "dilation")
    t, l, b, r = normalize_padding(attrs["padding"])
    H, W = x.shape[ha], x.shape[wa]
    oh = _out_size(H, kh, sh, dh, t, b, attrs["ceil_mode"])
    ow = _out_size(W, kw, sw, dw, l, r, attrs["ceil_mode"])
    if oh < 1 or ow < 1:
        raise OpError(f"{name}: window {kh}x{kw} does not fit input {H}x{W}")
    shape = list(x.shape)
    shape[ha], shape[wa] = oh, ow
    ry = te.reduce_axis((0, kh), "ry")
    rx = te.reduce_axis((0, kw), "rx")
    acc = acc_dtype(x.dtype)

    def src(i, y, xx):
        j = list(i)
        j[ha], j[wa] = y, xx
        return x(*j)

    def inside(y, xx):
        return tir.all(y >= 0, y < H, xx >= 0, xx < W)

    def pos(i):
        return i[ha] * sh + ry * dh - t, i[wa] * sw + rx * dw - l

    if kind == "max":
        lowest = _lowest(x.dtype)
        keyed = has_order_key(x.dtype)  # NaN in a window wins (see nanprop.py)

        def body(*i):
            y, xx = pos(i)
            v = tir.if_then_else(inside(y, xx), src(i, y, xx), lowest)
            return keyed_reduce("max", v, [ry, rx]) if keyed else reduce_max(v, axis=[ry, rx])

        out = te_compute(shape, body, name=name, tag="pool")
        if keyed:
            return lazy(shape, x.dtype, lambda *i: from_key(out(*i), x.dtype, "max"))
        return Value.of_tensor(out)

    def body(*i):
        y, xx = pos(i)
        return te.sum(tir.if_then_else(inside(y, xx), tir.Cast(acc, src(i, y, xx)), tir.const(0, acc)),
                      axis=[ry, rx])

    total = te_compute(shape, body, name=name, tag="pool")

    def count(i):
        if attrs["count_include_pad"]:
            # windows are clipped to the padded extent, as ONNX and PyTorch count
            y0, x0 = i[ha] * sh - t, i[wa] * sw - l
            y1 = tir.min(y0 + (kh - 1) * dh + 1, H + b)
            x1 = tir.min(x0 + (kw - 1) * dw + 1, W + r)
            return tir.Cast(acc, ((y1 - y0 + dh - 1) // dh) * ((x1 - x0 + dw - 1) // dw))
        y0, x0 = i[ha] * sh - t, i[wa] * sw - l
        ny = _count_valid(y0, kh, dh, H)
        nx = _count_valid(x0, kw, dw, W)
        return tir.Cast(acc, tir.max(ny * nx, 1))

    return lazy(shape, x.dtype, lambda *i: tir.Cast(x.dtype, total(*i) / count(i)))


def _count_valid(start, k: int, d: int, n: int):
    """How many of the k taps start, start+d, ... fall inside [0, n)."""
    expr = tir.const(0, "int32")
    for q in range(k):
        p = start + q * d
        expr = expr + tir.Select(tir.all(p >= 0, p < n), 1, 0)
    return expr


@register_op("max_pool2d", OpPattern.OUT_ELEMWISE_FUSABLE, anchor="pool", num_inputs=1, attrs=_POOL_ATTRS,
             geometry=_pool_geometry)
def max_pool2d(inputs: Sequence[Value], attrs: dict) -> Value:
    """Max pooling (padding never wins)."""
    return _pool("max", inputs, attrs)


@register_op("avg_pool2d", OpPattern.OUT_ELEMWISE_FUSABLE, anchor="pool", num_inputs=1, attrs=_POOL_ATTRS,
             geometry=_pool_geometry)
def avg_pool2d(inputs: Sequence[Value], attrs: dict) -> Value:
    """Average pooling; count_include_pad as ONNX."""
    return _pool("avg", inputs, attrs)


def _global(kind: str, inputs: Sequence[Value], attrs: dict) -> Value:
    (x,) = inputs
    ha, wa = _hw_axes(attrs["layout"], x, f"global_{kind}_pool2d")
    return _pool(kind, inputs, {**_POOL_ATTRS, "layout": attrs["layout"],
                                "kernel": (x.shape[ha], x.shape[wa])})


@register_op("global_avg_pool2d", OpPattern.OUT_ELEMWISE_FUSABLE, anchor="pool", num_inputs=1,
             attrs={"layout": "NCHW"}, geometry=_pool_geometry)
def global_avg_pool2d(inputs: Sequence[Value], attrs: dict) -> Value:
    """Mean over H and W, keeping them as size-1 dims."""
    return _global("avg", inputs, attrs)


@register_op("global_max_pool2d", OpPattern.OUT_ELEMWISE_FUSABLE, anchor="pool", num_inputs=1,
             attrs={"layout": "NCHW"}, geometry=_pool_geometry)
def global_max_pool2d(inputs: Sequence[Value], attrs: dict) -> Value:
    """Max over H and W, keeping them as size-1 dims."""
    return _global("max", inputs, attrs)


@register_op("lrn", OpPattern.OUT_ELEMWISE_FUSABLE, anchor="lrn", num_inputs=1,
             attrs={"size": 5, "alpha": 1e-4, "beta": 0.75, "bias": 1.0, "axis": 1}, geometry=_lrn_geometry)
def lrn(inputs: Sequence[Value], attrs: dict) -> Value:
    """Local response normalisation across channels (ONNX LRN)."""
    (x,) = inputs
    ax = attrs["axis"] % x.ndim
    size, C = int(attrs["size"]), x.shape[ax]
    lo = (size - 1) // 2
    rc = te.reduce_axis((0, size), "rc")
    acc = acc_dtype(x.dtype)

    def body(*i):
        c = i[ax] - lo + rc
        j = list(i)
        j[ax] = c
        v = tir.Cast(acc, x(*j))
        return te.sum(tir.if_then_else(tir.all(c >= 0, c < C), v * v, tir.const(0, acc)), axis=rc)

    sq = te_compute(x.shape, body, name="lrn_sqsum", tag="pool")

    def fn(*i):
        den = tir.power(tir.const(attrs["bias"], acc) + tir.const(attrs["alpha"] / size, acc) * sq(*i),
                        tir.const(attrs["beta"], acc))
        return tir.Cast(x.dtype, tir.Cast(acc, x(*i)) / den)

    return lazy(x.shape, x.dtype, fn)
