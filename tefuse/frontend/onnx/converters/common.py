"""Small helpers more than one op family uses: inputs, int lists, axes, operand dtypes."""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ....graph.ir import Node
from ..context import ImportContext, OnnxNode, Unsupported
from ..shape_values import is_shape_value


def input_node(ctx: ImportContext, n: OnnxNode, k: int = 0) -> Node:
    name = n.input(k)
    if name is None:
        raise Unsupported(f"input {k} is required")
    return ctx.node(name)


def int_list(v) -> list[int]:
    if is_shape_value(v):
        raise Unsupported(f"a value computed from symbolic dims ({', '.join(map(str, v.reshape(-1)))}) where "
                          f"fixed sizes are needed; import with input_shapes= to fix them")
    return [int(i) for i in np.asarray(v).reshape(-1)]


def rank_check(x: Node, rank: int, what: str) -> None:
    if len(x.shape) != rank:
        raise Unsupported(f"{what}: only {rank}-D input is supported, got shape {x.shape}")


def binary_operand(ctx: ImportContext, name: str, dtype: str) -> Node:
    """A binary operand; constants are cast to the other side's dtype (ONNX Pow allows mixing)."""
    if is_shape_value(ctx.env.get(name)):  # dims read as data: computed in int64, cast to the other side's
        v = ctx.node(name)
        return v if dtype == "int64" else ctx.emit("cast", [v], None, dtype=dtype)
    if ctx.is_const(name) and ctx.dtype(name) != dtype:
        return ctx.b.const(ctx.const(name).astype(dtype), dtype=dtype, name=ctx.fresh(name))
    return ctx.node(name)


def main_dtype(ctx: ImportContext, names: Sequence[str]) -> str:
    for nm in names:
        if not ctx.is_const(nm):
            return ctx.dtype(nm)
    return ctx.dtype(names[0])


def axis_attr(n: OnnxNode, nd: int, default: int) -> int:
    """The node's `axis` attribute as a non-negative axis of a rank-`nd` input."""
    raw = int(n.attr("axis", default))
    ax = raw + nd if raw < 0 else raw
    if not 0 <= ax < nd:
        raise Unsupported(f"axis {raw} is out of range for a rank-{nd} input")
    return ax


def axes_arg(ctx: ImportContext, n: OnnxNode, input_from: int, k: int = 1) -> Optional[list[int]]:
    """Axes given as an attribute before opset `input_from`, as an optional input from it on."""
    if n.opset < input_from:
        v = n.attr("axes")
    else:
        nm = n.input(k)
        v = None if nm is None else ctx.const(nm, "axes")
    return None if v is None else int_list(v)
