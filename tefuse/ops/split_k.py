"""split_sum: the second half of a split-K product (graph/split_k.py).

A GEMM or conv whose output alone gives too few tiles to fill the GPU computes S partial sums
over slices of its reduction instead (conv2d's `split_k`); split_sum adds them up in float32 and
casts to the product's dtype (an int8 product's int32 sums are added as int32, exactly). It is a
reduction anchor, so the product's epilogue (bias, BN, activation, residual) fuses into it, and
no later kernel reads the partials as a prologue.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from tvm import te, tirx as tir

from ..errors import OpError
from .registry import OpPattern, register_op
from .value import Value, dim_of, te_compute

SUM_DTYPES = ("float16", "bfloat16", "float32", "int32")


@dataclass(frozen=True)
class SplitSumGeometry:
    """S partial results of `size` elements each."""

    splits: int
    size: int


def _geometry(in_shapes, out_shape, attrs: dict) -> SplitSumGeometry:
    size = 1
    for d in out_shape:
        size *= d
    return SplitSumGeometry(in_shapes[0][0], size)


@register_op("split_sum", OpPattern.COMM_REDUCE, anchor="split_sum", num_inputs=1, attrs={"dtype": "float32"},
             geometry=_geometry)
def split_sum(inputs: Sequence[Value], attrs: dict) -> Value:
    """Sum over the leading (split) axis of a split-K product's partials (float32, cast to `dtype`;
    an int8 product's int32)."""
    (x,) = inputs
    dtype = attrs["dtype"]
    if dtype not in SUM_DTYPES:
        raise OpError(f"split_sum: dtype must be one of {', '.join(SUM_DTYPES)}, got {dtype!r}")
    # an int8 product's partials are its int32 sums, added exactly; the rest float32
    want = "int32" if dtype == "int32" else "float32"
    if x.dtype != want or x.ndim < 2:
        raise OpError(f"split_sum: takes {want} partials [S, ...] for a {dtype} sum, got {x.dtype} {x.shape}")
    s = te.reduce_axis((0, x.shape[0]), "ks")
    out = te_compute(x.shape[1:], lambda *i: te.sum(x(s, *i), axis=s), name="split_sum", tag="split_sum")
    if dtype == want:
        return Value.of_tensor(out)
    return Value(tuple(dim_of(d) for d in out.shape), dtype, lambda *i: tir.Cast(dtype, out(*i)))
