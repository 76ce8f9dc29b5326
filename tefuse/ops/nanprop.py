"""NaN-propagating max/min, as numpy and onnxruntime compute them.

TVM's `max(a, b)` lowers to `a > b ? a : b`, so whether a NaN survives depends on the operand
order (and the simplifier may swap them): relu(NaN) gave 0, a max reduction dropped a NaN. These
rules are one select each, so fused epilogues and reductions stay one pass.
"""
from __future__ import annotations

import numpy as np
from tvm import te, tirx as tir

from .value import expr_dtype as _dt


def is_float(e) -> bool:
    """Whether a TIR expression is floating point."""
    return _dt(e).startswith(("float", "bfloat"))


def _nan(a):
    # (a != a is simplified to false by TVM; its isnan takes no bfloat16: widened, exactly)
    return tir.isnan(tir.Cast("float32", a) if _dt(a) == "bfloat16" else a)


def fmax(a, b):
    """max(a, b) that returns NaN when either is NaN."""
    if not is_float(a):
        return tir.max(a, b)
    return tir.Select(tir.Or(a > b, _nan(a)), a, b)


def fmin(a, b):
    """min(a, b) that returns NaN when either is NaN."""
    if not is_float(a):
        return tir.min(a, b)
    return tir.Select(tir.Or(a < b, _nan(a)), a, b)


def max_with(x, c):
    """max(x, c) for a constant c: NaN x passes through (one select)."""
    if not is_float(x):
        return tir.max(x, c)
    return tir.Select(x < c, c, x)


def min_with(x, c):
    """min(x, c) for a constant c: NaN x passes through (one select)."""
    if not is_float(x):
        return tir.min(x, c)
    return tir.Select(x > c, c, x)


def clip_with(x, lo: float, hi: float, dtype: str):
    """min(max(x, lo), hi) for constant bounds (None or infinite: no bound): two selects
    without repeating x's expression; NaN passes through; lo > hi gives hi (numpy, ONNX)."""
    lo = None if lo is None or lo == float("-inf") else lo
    hi = None if hi is None or hi == float("inf") else hi
    if not is_float(x):  # integers: bounds outside the dtype's range are no bound
        info = np.iinfo(dtype)
        lo = None if lo is None or lo <= info.min else min(int(np.ceil(lo)), int(info.max))
        hi = None if hi is None or hi >= info.max else max(int(np.floor(hi)), int(info.min))
        y = x if lo is None else tir.max(x, tir.const(lo, dtype))
        return y if hi is None else tir.min(y, tir.const(hi, dtype))
    if lo is not None and hi is not None and lo > hi:
        return min_with(max_with(x, tir.const(lo, dtype)), tir.const(hi, dtype))
    y = x if hi is None else tir.Select(x > tir.const(hi, dtype), tir.const(hi, dtype), x)
    return y if lo is None else tir.Select(x < tir.const(lo, dtype), tir.const(lo, dtype), y)


def lowest(dtype):
    """The identity of max: -inf for floats (so a max over -inf values is -inf, not -FLT_MAX)."""
    dtype = str(dtype)
    return tir.const(float("-inf"), dtype) if dtype.startswith(("float", "bfloat")) else tir.min_value(dtype)


def highest(dtype):
    dtype = str(dtype)
    return tir.const(float("inf"), dtype) if dtype.startswith(("float", "bfloat")) else tir.max_value(dtype)


def _reducer(kind: str):
    if kind == "max":
        return te.comm_reducer(lambda a, b: fmax(a, b), lambda t: lowest(t), name="nanmax")
    return te.comm_reducer(lambda a, b: fmin(a, b), lambda t: highest(t), name="nanmin")


NANMAX = _reducer("max")
NANMIN = _reducer("min")


# NaN-aware max/min reductions within TVM's constraints. The CUDA templates' rfactor and
# cross-thread allreduce match only TVM's built-in reducers ("No matched reducer for the identity
# and the combiner"), so NANMAX/NANMIN above cannot be used there. Instead a reduction runs the
# built-in max/min over an integer *order key* of each float: its bits, with negative values'
# magnitude bits flipped (so integer order is float order, -0 just below +0), and every NaN as
# the extreme key that wins (INT_MAX for max, INT_MIN for min). The result's key is decoded in
# the epilogue: the extreme key is NaN, any other gives back the exact float. One pass, one
# reduction, any template.
# bfloat16 is keyed as its float32 widening (exact): llvm computes bfloat16 in float32, so its
# 16 bits cannot be reinterpreted there
_KEYS = {"float32": ("int32", 0x7FFFFFFF), "float16": ("int16", 0x7FFF), "bfloat16": ("int32", 0x7FFFFFFF),
         "float64": ("int64", 0x7FFFFFFFFFFFFFFF)}


def has_order_key(dtype) -> bool:
    return str(dtype) in _KEYS


def key_dtype(dtype) -> str:
    return _KEYS[str(dtype)][0]


def _nan_key(kind: str, it: str):
    return tir.max_value(it) if kind == "max" else tir.min_value(it)


# the bits of +inf: a float is NaN exactly when its bits without the sign are above them
_INF_BITS = {"float32": 0x7F800000, "float16": 0x7C00, "float64": 0x7FF0000000000000}


def order_key(x, kind: str):
    """The integer whose max (kind 'max') or min ('min') is the key of the NaN-propagating
    max/min of the floats. NaN is told from the bits (not tir.isnan, which makes TVM's
    vectorizer give up on the whole loop: a vectorized NHWC max pool then loads one element at
    a time)."""
    if _dt(x) == "bfloat16":
        x = tir.Cast("float32", x)
    it, mag = _KEYS[_dt(x)]
    b = tir.reinterpret(it, x)
    k = tir.Select(b >= tir.const(0, it), b, tir.bitwise_xor(b, tir.const(mag, it)))
    nan = tir.bitwise_and(b, tir.const(mag, it)) > tir.const(_INF_BITS[_dt(x)], it)
    return tir.Select(nan, _nan_key(kind, it), k)


def from_key(k, dtype: str, kind: str):
    """The float an order key stands for (NaN for the extreme key)."""
    dtype = str(dtype)
    it, mag = _KEYS[dtype]
    b = tir.Select(k >= tir.const(0, it), k, tir.bitwise_xor(k, tir.const(mag, it)))
    # bfloat16: its float32 key narrowed (the NaN test stays outermost: under a cast, TVM lost it)
    value = tir.Cast(dtype, tir.reinterpret("float32", b)) if dtype == "bfloat16" else tir.reinterpret(dtype, b)
    return tir.Select(_is_nan_key(k, kind, it), tir.const(float("nan"), dtype), value)


def _is_nan_key(k, kind: str, it: str):
    """k is the extreme key. As an inequality: TVM's simplifier folds `k == INT_MIN` to false (a
    float32 or float16 key's bits are NaN anyway; bfloat16's narrowing is not)."""
    if kind == "max":
        return k > tir.max_value(it) - tir.const(1, it)
    return k < tir.min_value(it) + tir.const(1, it)


def reduce_max(expr, axis):
    """te.max (a built-in reducer); floats go through order keys: see `keyed_reduce`."""
    return te.max(expr, axis=axis)


def reduce_min(expr, axis):
    return te.min(expr, axis=axis)


def keyed_reduce(kind: str, expr, axis):
    """max/min over order keys of a float expression (decode the result with `from_key`)."""
    red = te.max if kind == "max" else te.min
    return red(order_key(expr, kind), axis=axis)
