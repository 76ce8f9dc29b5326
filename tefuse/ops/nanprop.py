"""NaN-propagating max/min, as numpy and onnxruntime compute them.

TVM's `max(a, b)` lowers to `a > b ? a : b`, so whether a NaN survives depends on the operand
order (and the simplifier may swap them): relu(NaN) gave 0, a max reduction dropped a NaN. These
rules are one select each, so fused epilogues and reductions stay one pass.
"""
from __future__ import annotations

import numpy as np
from tvm import te, tirx as tir


def _dt(e) -> str:
    return str(e.dtype) if hasattr(e, "dtype") else str(e.ty)


def is_float(e) -> bool:
    """Whether a TIR expression is floating point."""
    return _dt(e).startswith(("float", "bfloat"))


def _nan(a):
    return tir.isnan(a)  # (a != a is simplified to false by TVM)


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


# Reductions keep TVM's own max/min reducers: the CUDA templates' rfactor / cross-thread
# allreduce only match TVM's built-in reducers ("No matched reducer for the identity and the
# combiner"), so NANMAX/NANMIN cannot be used there yet. NaN in a max/min reduction or a
# max-pool window is therefore still dropped (tests/ops/test_nan.py marks it xfail strict).
NAN_AWARE_REDUCTIONS = False


def reduce_max(expr, axis):
    if NAN_AWARE_REDUCTIONS and is_float(expr):
        return NANMAX(expr, axis=axis)
    return te.max(expr, axis=axis)


def reduce_min(expr, axis):
    if NAN_AWARE_REDUCTIONS and is_float(expr):
        return NANMIN(expr, axis=axis)
    return te.min(expr, axis=axis)
