"""cumsum (ONNX CumSum) as a reduction: out[..., i, ...] = sum of x[..., k, ...] over k <= i.

Why a reduction and not a scan: every output element is a masked sum over the whole axis (a
reduction with a `where` on k), which the `reduce` templates already schedule on every target
(on CUDA, cross-thread: a row of threads sums each output's prefix). It reads O(n^2 / 2)
elements per row of n where a scan reads n; for the axis lengths models use it on (token
positions from an attention mask, a few thousand at most) that costs less than a scan's extra
passes would. Sums accumulate in float32 for half types, as the other reductions do.
"""
from __future__ import annotations

import math
from typing import Sequence

from tvm import te, tirx as tir

from ..errors import OpError
from .reduce import ReduceGeometry
from .registry import OpPattern, register_op
from .value import Value, acc_dtype, lazy, te_compute


def _axis(attrs: dict, rank: int) -> int:
    ax = int(attrs["axis"])
    a = ax + rank if ax < 0 else ax
    if not 0 <= a < rank:
        raise OpError(f"cumsum: axis {ax} out of range for rank {rank}")
    return a


def _cumsum_geometry(in_shapes, out_shape, attrs: dict) -> ReduceGeometry:
    ax = _axis(attrs, len(out_shape))
    return ReduceGeometry(max(1, math.prod(out_shape)), max(1, out_shape[ax]), ax == len(out_shape) - 1, (ax,))


# which k sum into position i: (reverse, exclusive) -> condition
_TAKES = {(False, False): lambda k, i: k <= i, (False, True): lambda k, i: k < i,
          (True, False): lambda k, i: k >= i, (True, True): lambda k, i: k > i}


@register_op("cumsum", OpPattern.COMM_REDUCE, anchor="reduce", num_inputs=1,
             attrs={"axis": 0, "exclusive": False, "reverse": False}, geometry=_cumsum_geometry)
def cumsum(inputs: Sequence[Value], attrs: dict) -> Value:
    """Cumulative sum along `axis`; `exclusive` leaves each element out of its own sum, `reverse`
    sums from the end."""
    (x,) = inputs
    if x.ndim == 0:
        raise OpError("cumsum: expects at least 1 dim, got a scalar")
    if x.dtype == "bool":
        raise OpError("cumsum: expects a numeric input, got bool")
    ax = _axis(attrs, x.ndim)
    acc = acc_dtype(x.dtype)
    k = te.reduce_axis((0, x.shape[ax]), "k")
    takes = _TAKES[(bool(attrs["reverse"]), bool(attrs["exclusive"]))]

    def element(*i):
        v = x(*i[:ax], k, *i[ax + 1:])
        return tir.Cast(acc, v) if acc != x.dtype else v

    zero = tir.const(0, acc)
    # the mask as a select, not te.sum's `where`: te.create_prim_func drops a reduction's condition
    red = te_compute(x.shape, lambda *i: te.sum(tir.Select(takes(k, i[ax]), element(*i), zero), axis=k),
                     name="cumsum", tag="reduce")
    if acc != x.dtype:
        return lazy(x.shape, x.dtype, lambda *i: tir.Cast(x.dtype, red(*i)))
    return Value.of_tensor(red)
