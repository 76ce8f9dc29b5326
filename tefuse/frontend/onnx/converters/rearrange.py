"""Rearranging ONNX ops (Expand, Tile, DepthToSpace, SpaceToDepth, Trilu), CumSum, and Range.

Their shape-giving inputs (Expand's shape, Tile's repeats, Trilu's k, CumSum's axis) must be
known at import; a Range with all-constant inputs folds at import, and one that is not has a
data-dependent output shape, which is refused.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..context import OnnxNode, Unsupported
from ..registry import converter
from ..shape_values import is_shape_value, target_dims
from .common import input_node, int_list


def _scalar_int(v: np.ndarray, what: str) -> int:
    if v.size != 1:
        raise Unsupported(f"{what} must be a single integer, got shape {list(v.shape)}")
    return int(v.reshape(()))


@converter("Expand")
def _expand(ctx, n):
    x = input_node(ctx, n)
    target = ctx.const(n.input(1), "shape")
    if is_shape_value(target):  # Shape arithmetic over symbolic dims (shape_values.py)
        return [ctx.emit("expand", [x], n.outputs[0], shape=tuple(target_dims(target)))]
    shape = int_list(target)
    try:
        if tuple(np.broadcast_shapes(x.shape, tuple(shape))) == x.shape:
            return [x]  # nothing to stretch
    except ValueError:
        pass  # the op says which dims do not broadcast
    return [ctx.emit("expand", [x], n.outputs[0], shape=tuple(shape))]


@converter("Tile")
def _tile(ctx, n):
    x = input_node(ctx, n)
    reps = int_list(ctx.const(n.input(1), "repeats"))
    if all(r == 1 for r in reps) and len(reps) == len(x.shape):
        return [x]
    return [ctx.emit("tile", [x], n.outputs[0], repeats=tuple(reps))]


def _check_blocks(n: OnnxNode) -> Optional[str]:
    if n.attr("blocksize") is None:
        return "blocksize is required"
    mode = n.attr("mode", "DCR")
    return None if mode in ("DCR", "CRD") else f"mode={mode!r} (DCR or CRD)"


@converter("DepthToSpace", attrs=["blocksize", "mode"], check=_check_blocks)
def _depth_to_space(ctx, n):
    return [ctx.emit("depth_to_space", [input_node(ctx, n)], n.outputs[0], blocksize=int(n.attr("blocksize")),
                     mode=n.attr("mode", "DCR"))]


@converter("SpaceToDepth", attrs=["blocksize", "mode"], check=_check_blocks)
def _space_to_depth(ctx, n):
    return [ctx.emit("space_to_depth", [input_node(ctx, n)], n.outputs[0], blocksize=int(n.attr("blocksize")),
                     mode=n.attr("mode", "DCR"))]


@converter("Trilu", attrs=["upper"])
def _trilu(ctx, n):
    k = _scalar_int(ctx.const(n.input(1), "k"), "k") if n.input(1) else 0
    return [ctx.emit("trilu", [input_node(ctx, n)], n.outputs[0], upper=bool(n.attr("upper", 1)), k=k)]


@converter("CumSum", attrs=["exclusive", "reverse"])
def _cumsum(ctx, n):
    axis = _scalar_int(ctx.const(n.input(1), "axis"), "axis")
    return [ctx.emit("cumsum", [input_node(ctx, n)], n.outputs[0], axis=axis,
                     exclusive=bool(n.attr("exclusive", 0)), reverse=bool(n.attr("reverse", 0)))]


def _symbolic_range(ctx, n):
    """start, start + delta, ... below a limit that is a dim expression; start and delta fixed."""
    start, delta = ctx.const(n.input(0), "start"), ctx.const(n.input(2), "delta")
    if is_shape_value(start) or is_shape_value(delta):
        raise Unsupported("Range over symbolic dims: only its limit may be one")
    s, d = _scalar_int(start, "start"), _scalar_int(delta, "delta")
    if d <= 0:
        raise Unsupported(f"Range over symbolic dims with delta {d}: only a positive delta")
    (limit,) = target_dims(ctx.const(n.input(1)))
    return ctx.emit("arange", [n.input(0)], n.outputs[0], length=(limit - s + d - 1) // d, delta=d)


@converter("Range", attrs=["stash_type"])
def _range(ctx, n):
    """Reached only when some input is not constant (an all-constant Range folds at import), or
    its limit is a dim expression (shape_values.py: torch.arange(seq_len) over a symbolic S)."""
    if all(ctx.is_const(n.input(k)) for k in range(3)) and is_shape_value(ctx.const(n.input(1))):
        return [_symbolic_range(ctx, n)]
    for k, what in enumerate(("start", "limit", "delta")):
        name = n.input(k)
        if ctx.is_const(name):
            continue
        if name in ctx.graph_inputs:
            try:
                ctx.const(name, what)  # records it: a caller may import again with its value
            except Unsupported:
                pass
            raise Unsupported(f"Range's output length depends on {what} {name!r}, a model input (a "
                              f"data-dependent shape); import with constant_inputs={{{name!r}: value}} "
                              f"to specialize on it")
        raise Unsupported(f"Range's output length depends on {what} {name!r}, computed at run time: a "
                          f"data-dependent shape, which tefuse's static shapes cannot hold")
    raise Unsupported("all inputs are constant but the node did not fold")
