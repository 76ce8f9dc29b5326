"""Reductions over axes (sum, mean, max, min, prod, the L1 / L2 norms, sum of squares, log of the
sum), softmax / log_softmax, and the row-wise normalisations (layer_norm, group_norm_rows)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, ClassVar, Optional, Sequence

from tvm import te, tirx as tir

from ..errors import OpError
from .nanprop import from_key, has_order_key, keyed_reduce, reduce_max, reduce_min
from .registry import OpPattern, register_op
from .value import Value, acc_dtype, expr_dtype, is_static_shape, lazy, te_compute

_PROD = te.comm_reducer(lambda a, b: a * b, lambda t: tir.const(1, t), name="prod")


def _mean(v, n):
    """v / n; n a count, or an expression of symbolic dims (cast to v's type at run time)."""
    d = expr_dtype(v)
    return v / (tir.const(n, d) if isinstance(n, int) else tir.Cast(d, n))


def _square(v):
    return v * v


def _real(f: Callable) -> Callable:
    """A post-map computed in float64 for an integer reduction, truncated back (onnx.reference:
    np.sqrt(...).astype(dtype)); floats as they are."""

    def post(v, n: int):
        d = expr_dtype(v)
        if d.startswith(("float", "bfloat")):
            return f(v)
        return tir.Cast(d, f(tir.Cast("float64", v)))

    return post


@dataclass(frozen=True)
class _Kind:
    """A reduction: each element mapped by `pre`, combined by `reducer`, the result mapped by
    `post(value, element count)`; pre and post run in the accumulator's dtype (float32 for
    half inputs: a sum, product or norm of many fp16 values overflows or loses its low terms)."""

    doc: str
    reducer: Callable
    pre: Optional[Callable] = None
    post: Optional[Callable] = None
    wide: bool = True  # accumulate half inputs in float32 (max and min need not)


_KINDS = {
    "sum": _Kind("sum", te.sum),
    "mean": _Kind("mean", te.sum, post=_mean),
    "max": _Kind("max (NaN propagates)", reduce_max, wide=False),
    "min": _Kind("min (NaN propagates)", reduce_min, wide=False),
    "prod": _Kind("product", _PROD),
    "l1": _Kind("sum of |x| (the L1 norm)", te.sum, pre=tir.abs),
    "l2": _Kind("sqrt of the sum of squares (the L2 norm)", te.sum, pre=_square, post=_real(tir.sqrt)),
    "sum_square": _Kind("sum of squares", te.sum, pre=_square),
    "log_sum": _Kind("log of the sum", te.sum, post=_real(tir.log)),
}


@dataclass(frozen=True)
class ReduceGeometry:
    """A reduction anchor as `rows` independent reductions of `extent` elements each;
    `innermost`: whether the reduced elements include the input's innermost (contiguous) axis.
    Pooling and LRN (pool.py) and softmax describe themselves the same way."""

    rows: int
    extent: int
    innermost: bool
    axes: tuple[int, ...] = ()
    window: ClassVar[bool] = False  # a short sliding window (pooling, LRN), not whole axes


@dataclass(frozen=True)
class SoftmaxGeometry:
    """softmax / log_softmax: one row per position of the other axes, reduced along `axis`."""

    rows: int
    extent: int
    innermost: bool
    axis: int
    window: ClassVar[bool] = False


def _reduce_geometry(in_shapes, out_shape, attrs: dict) -> ReduceGeometry:
    ins = in_shapes[0]
    axes = range(len(ins)) if attrs["axes"] is None else sorted({x % len(ins) for x in attrs["axes"]})
    red = math.prod(ins[x] for x in axes) if ins else 1
    return ReduceGeometry(max(1, math.prod(out_shape)), max(1, red), (len(ins) - 1) in axes, tuple(axes))


def _softmax_geometry(in_shapes, out_shape, attrs: dict) -> SoftmaxGeometry:
    ax = int(attrs["axis"]) % max(1, len(out_shape))
    extent = out_shape[ax] if out_shape else 1
    red = attrs.get("valid") or extent  # the elements a row reduces (softmax's valid)
    return SoftmaxGeometry(max(1, math.prod(out_shape) // max(extent, 1)), red, ax == len(out_shape) - 1, ax)


def _axes(x: Value, axes, name: str) -> list[int]:
    if axes is None:
        return list(range(x.ndim))
    out = []
    for a in axes:
        b = a + x.ndim if a < 0 else a
        if not 0 <= b < x.ndim:
            raise OpError(f"{name}: axis {a} out of range for rank {x.ndim}")
        out.append(b)
    return sorted(set(out))


def _reduce(kind: str, inputs: Sequence[Value], attrs: dict) -> Value:
    (x,) = inputs
    k = _KINDS[kind]
    axes = _axes(x, attrs["axes"], kind)
    keep = attrs["keepdims"]
    raxes = {a: te.reduce_axis((0, x.shape[a]), f"r{a}") for a in axes}
    acc = acc_dtype(x.dtype) if k.wide else x.dtype
    shape = tuple(1 if a in raxes else s for a, s in enumerate(x.shape)) if keep else \
        tuple(s for a, s in enumerate(x.shape) if a not in raxes)

    def element(*i):
        it = iter(i)
        idx = []
        for a in range(x.ndim):
            if a in raxes:
                if keep:
                    next(it)
                idx.append(raxes[a])
            else:
                idx.append(next(it))
        v = tir.Cast(acc, x(*idx)) if acc != x.dtype else x(*idx)
        return k.pre(v) if k.pre else v

    if kind in ("max", "min") and has_order_key(x.dtype):  # NaN propagates (see nanprop.py)
        red = te_compute(shape, lambda *i: keyed_reduce(kind, element(*i), list(raxes.values())),
                         name=kind, tag="reduce")
        return lazy(shape, x.dtype, lambda *i: from_key(red(*i), x.dtype, kind))
    red = te_compute(shape, lambda *i: k.reducer(element(*i), axis=list(raxes.values())),
                     name=kind, tag="reduce")
    if k.post:
        n = math.prod(x.shape[a] for a in axes)
        return lazy(shape, x.dtype, lambda *i: tir.Cast(x.dtype, k.post(red(*i), n)))
    if acc != x.dtype:
        return lazy(shape, x.dtype, lambda *i: tir.Cast(x.dtype, red(*i)))
    return Value.of_tensor(red)


def _register_reduce(kind: str) -> None:
    def compute(inputs: Sequence[Value], attrs: dict) -> Value:
        return _reduce(kind, inputs, attrs)

    compute.__doc__ = f"The {_KINDS[kind].doc} over axes."
    register_op(f"reduce_{kind}", OpPattern.COMM_REDUCE, anchor="reduce", num_inputs=1,
                attrs={"axes": None, "keepdims": False}, geometry=_reduce_geometry)(compute)


for _k in _KINDS:
    _register_reduce(_k)


@dataclass(frozen=True)
class _Rows:
    """A row-wise op's view of x along `axis`: its rows (red_shape) and `at(row, k)`, the row's
    k-th element in the float32 (for half types) the statistics are computed in."""

    ax: int
    acc: str
    red_shape: tuple
    at: Callable


def _rows(x: Value, attrs: dict, op: str) -> _Rows:
    ax = attrs["axis"] + x.ndim if attrs["axis"] < 0 else attrs["axis"]
    if not 0 <= ax < x.ndim:
        raise OpError(f"{op}: axis {attrs['axis']} out of range for rank {x.ndim}")
    acc = acc_dtype(x.dtype)
    xin = x.materialize(f"{op}_in") if x.is_lazy else x.tensor

    def at(i, k):
        j = list(i)
        j.insert(ax, k)
        return tir.Cast(acc, xin(*j))

    return _Rows(ax, acc, tuple(s for a, s in enumerate(x.shape) if a != ax), at)


def _softmax(inputs: Sequence[Value], attrs: dict, log: bool) -> Value:
    (x,) = inputs
    rows = _rows(x, attrs, "softmax")
    ax, red_shape, at = rows.ax, rows.red_shape, rows.at
    # valid: only the axis' first `valid` elements count; the rest is padding and comes out 0
    # (graph/attention_keys.py pads attention's keys so that every score row is 16-byte aligned)
    padded = bool(attrs.get("valid"))
    valid = int(attrs["valid"]) if padded else x.shape[ax]
    if padded and not (is_static_shape(x.shape[ax:ax + 1]) and 0 < valid <= x.shape[ax]):
        raise OpError(f"softmax: valid={attrs.get('valid')} outside 1..{x.shape[ax]} (the axis' extent)")
    padded = padded and valid != x.shape[ax]

    k1 = te.reduce_axis((0, valid), "k1")
    mx = te_compute(red_shape, lambda *i: te.max(at(i, k1), axis=k1), name="softmax_max", tag="softmax")
    k2 = te.reduce_axis((0, valid), "k2")
    den = te_compute(red_shape, lambda *i: te.sum(tir.exp(at(i, k2) - mx(*i)), axis=k2),
                     name="softmax_sum", tag="softmax")

    def fn(*i):
        r = [i[a] for a in range(x.ndim) if a != ax]
        z = at(r, i[ax]) - mx(*r)
        out = tir.Cast(x.dtype, z - tir.log(den(*r)) if log else tir.exp(z) / den(*r))
        return tir.if_then_else(i[ax] < valid, out, tir.const(0, x.dtype)) if padded else out

    return lazy(x.shape, x.dtype, fn)


@register_op("softmax", OpPattern.OPAQUE, anchor="softmax", num_inputs=1, attrs={"axis": -1},
             geometry=_softmax_geometry, optional={"valid": 0})  # optional: other softmaxes keep their keys
def softmax(inputs: Sequence[Value], attrs: dict) -> Value:
    """Numerically stable softmax along `axis` (over its first `valid` elements when set)."""
    return _softmax(inputs, attrs, log=False)


@register_op("log_softmax", OpPattern.OPAQUE, anchor="softmax", num_inputs=1, attrs={"axis": -1},
             geometry=_softmax_geometry)
def log_softmax(inputs: Sequence[Value], attrs: dict) -> Value:
    """log(softmax(x)) along `axis`."""
    return _softmax(inputs, attrs, log=True)


@register_op("layer_norm", OpPattern.OPAQUE, anchor="norm", num_inputs=3, attrs={"axis": -1, "epsilon": 1e-5},
             geometry=_softmax_geometry)
def layer_norm(inputs: Sequence[Value], attrs: dict) -> Value:
    """(x - mean) * rsqrt(var + epsilon) * scale + bias along one axis, as one row-wise kernel
    (mean, then the centred variance, then the output, per row in one thread block, like
    softmax); statistics in float32 whatever x's dtype, the result in x's dtype. ONNX's
    LayerNormalization decomposed into reductions took three kernels."""
    x, scale, bias = inputs
    rows = _rows(x, attrs, "layer_norm")
    ax, acc, red_shape, at = rows.ax, rows.acc, rows.red_shape, rows.at
    n = x.shape[ax]
    for name, v in (("scale", scale), ("bias", bias)):
        if v.shape != (n,):
            raise OpError(f"layer_norm: {name} must have shape ({n},), got {v.shape}")
    inv_n = tir.const(1.0 / n, acc) if isinstance(n, int) else tir.const(1.0, acc) / tir.Cast(acc, n)
    k1 = te.reduce_axis((0, n), "k1")
    total = te_compute(red_shape, lambda *i: te.sum(at(i, k1), axis=k1), name="norm_sum", tag="norm")
    k2 = te.reduce_axis((0, n), "k2")

    def centred_square(i, k):
        d = at(i, k) - total(*i) * inv_n
        return d * d

    sq = te_compute(red_shape, lambda *i: te.sum(centred_square(i, k2), axis=k2),
                    name="norm_sqsum", tag="norm")
    eps = tir.const(float(attrs["epsilon"]), acc)

    def fn(*i):
        r = [i[a] for a in range(x.ndim) if a != ax]
        z = (at(r, i[ax]) - total(*r) * inv_n) * tir.rsqrt(sq(*r) * inv_n + eps)
        return tir.Cast(x.dtype, z * tir.Cast(acc, scale(i[ax])) + tir.Cast(acc, bias(i[ax])))

    return lazy(x.shape, x.dtype, fn)


def _group_rows_geometry(in_shapes, out_shape, attrs: dict) -> SoftmaxGeometry:
    n, g, extent = out_shape
    return SoftmaxGeometry(n * g, extent, True, 2)


def _unravel(flat, shape: Sequence[int]) -> list:
    """Indices into `shape` (row-major) of a flat offset below its size."""
    idx = []
    for s in reversed(shape):
        idx.append(tir.floormod(flat, s) if s != 1 else tir.const(0, expr_dtype(flat)))
        flat = tir.floordiv(flat, s)
    return list(reversed(idx))


@register_op("group_norm_rows", OpPattern.OPAQUE, anchor="norm", num_inputs=3, attrs={"groups": 1, "epsilon": 1e-5},
             geometry=_group_rows_geometry)
def group_norm_rows(inputs: Sequence[Value], attrs: dict) -> Value:
    """Group normalisation of x [N, C, *spatial] with `groups` groups of C/groups channels, scale
    and bias per channel ([C]) or per group ([groups]); groups == C is instance normalisation.

    Its output is the row view [N, groups, C/groups * prod(spatial)], one row a group: that is
    the shape layer_norm's one-block-a-row kernel ("norm" templates) reduces along its last axis,
    mean then centred variance then the output, statistics in float32 whatever x's dtype. A
    reshape back to x's shape follows; the op being opaque, whatever reads it is a kernel of its
    own anyway, and the reshape is computed inside that one (a copy's index, no kernel)."""
    x, scale, bias = inputs
    if x.ndim < 2:
        raise OpError(f"group_norm_rows: x must be [N, C, ...], got shape {x.shape}")
    (n, c), spatial = x.shape[:2], x.shape[2:]
    g = attrs["groups"]
    if not isinstance(g, int) or g < 1 or c % g:
        raise OpError(f"group_norm_rows: groups={g!r} must be a positive integer dividing the {c} channels")
    for what, v in (("scale", scale), ("bias", bias)):
        if v.shape not in ((c,), (g,)):
            raise OpError(f"group_norm_rows: {what} must have shape ({c},) (per channel) or ({g},) (per group), "
                          f"got {v.shape}")
    eps = float(attrs["epsilon"])
    if not eps >= 0:
        raise OpError(f"group_norm_rows: epsilon must be >= 0, got {eps}")
    cg, size = c // g, math.prod(spatial)
    extent, acc = cg * size, acc_dtype(x.dtype)
    xin = x.materialize("norm_in") if x.is_lazy else x.tensor

    def channel(gi, k):
        return gi if cg == 1 else gi * cg + (k if size == 1 else tir.floordiv(k, size))

    def at(ni, gi, k):
        where = _unravel(k if cg == 1 else tir.floormod(k, size), spatial) if spatial else []
        return tir.Cast(acc, xin(ni, channel(gi, k), *where))

    inv_n = tir.const(1.0 / extent, acc)
    k1 = te.reduce_axis((0, extent), "k1")
    total = te_compute((n, g), lambda ni, gi: te.sum(at(ni, gi, k1), axis=k1), name="norm_sum", tag="norm")
    k2 = te.reduce_axis((0, extent), "k2")

    def centred_square(ni, gi, k):
        d = at(ni, gi, k) - total(ni, gi) * inv_n
        return d * d

    sq = te_compute((n, g), lambda ni, gi: te.sum(centred_square(ni, gi, k2), axis=k2), name="norm_sqsum", tag="norm")
    eps_c = tir.const(eps, acc)

    def param(v, gi, k):
        return tir.Cast(acc, v(channel(gi, k) if v.shape == (c,) and cg > 1 else gi))

    def fn(ni, gi, k):
        z = (at(ni, gi, k) - total(ni, gi) * inv_n) * tir.rsqrt(sq(ni, gi) * inv_n + eps_c)
        return tir.Cast(x.dtype, z * param(scale, gi, k) + param(bias, gi, k))

    return lazy((n, g, extent), x.dtype, fn)
