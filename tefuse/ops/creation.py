"""Tensors made from sizes alone: `arange` (ONNX Range whose length is a symbolic dim) and
`dims` (a shape computed from symbolic dims, used as a tensor: `seq_len * pos`).

Why: an export's attention mask and position ids count up to the sequence length
(`torch.arange(seq_len)`); with the length fixed ONNX's Range folds to a constant at import,
with it symbolic it is computed in the kernel that reads it (an injective op, so it fuses).
"""
from __future__ import annotations

import math
from typing import Sequence

from tvm import tirx as tir

from ..errors import OpError
from .registry import OpPattern, register_op
from .value import Value, dim_of, lazy


@register_op("arange", OpPattern.INJECTIVE, num_inputs=1, attrs={"length": 1, "delta": 1})
def arange(inputs: Sequence[Value], attrs: dict) -> Value:
    """start + i * delta for i below `length` (an int or a dim expression), in start's dtype;
    the input is start, a scalar."""
    (start,) = inputs
    if start.ndim != 0:
        raise OpError(f"arange: start must be a scalar, got shape {start.shape}")
    length = dim_of(attrs["length"])
    if isinstance(length, int) and length < 0:
        raise OpError(f"arange: negative length {length}")
    delta = tir.const(attrs["delta"], start.dtype)
    return lazy((length,), start.dtype, lambda i: start() + tir.Cast(start.dtype, i) * delta)


@register_op("dims", OpPattern.INJECTIVE, num_inputs=1, attrs={"values": (), "shape": ()})
def dims(inputs: Sequence[Value], attrs: dict) -> Value:
    """An int64 tensor of `shape` holding `values` (ints and dim expressions, row-major): a value
    of a model's shape arithmetic read as data. The input is a scalar it adds (zero), which gives
    the op a producer."""
    (zero,) = inputs
    values = [dim_of(v) for v in attrs["values"]]
    shape = tuple(int(d) for d in attrs["shape"])
    if len(values) != math.prod(shape):
        raise OpError(f"dims: {len(values)} values for shape {shape}")

    def at(*i):
        flat = tir.const(0, "int64")
        for k, d in zip(i, shape):
            flat = flat * d + tir.Cast("int64", k)
        out = tir.Cast("int64", values[-1])
        for k in range(len(values) - 2, -1, -1):
            out = tir.Select(flat == k, tir.Cast("int64", values[k]), out)
        return zero() + out

    return lazy(shape, "int64", at)
