"""Indexing ONNX ops: Gather, GatherElements, GatherND, ScatterND, ScatterElements (and its old
name Scatter), OneHot, ArgMax, ArgMin, TopK; NonZero refused by name.

Indices known at import are checked here (an index outside [-dim, dim) is refused naming it, as
onnxruntime refuses it at run time); indices computed at run time become tefuse ops that clamp
their reads and drop out-of-range scatters (tefuse/ops/indexing.py).
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ....graph.ir import Node
from ..context import ImportContext, OnnxNode, Unsupported
from ..registry import converter, folder
from .common import axis_attr, input_node

REDUCTIONS = {"none": "none", "add": "add", "mul": "mul", "max": "max", "min": "min"}


def _wrapped(idx: np.ndarray, dims, what: str) -> np.ndarray:
    """Constant ONNX indices with negative ones counted from the end; `dims` holds each index's
    axis size (broadcast against idx). An index outside [-dim, dim) is refused naming it."""
    idx = np.asarray(idx).astype(np.int64)
    dims = np.broadcast_to(np.asarray(dims, np.int64), idx.shape)
    bad = (idx < -dims) | (idx >= dims)
    if bad.any():  # ONNX allows [-dim, dim): a negative index counts from the end
        k = tuple(np.argwhere(bad)[0])
        i, dim = int(idx[k]), int(dims[k])
        raise Unsupported(f"index {i} is out of range for {what} of size {dim} (indices must be in "
                          f"[{-dim}, {dim - 1}])")
    return np.where(idx < 0, idx + dims, idx)


def _const_node(ctx: ImportContext, value: np.ndarray, base: str) -> Node:
    return ctx.b.const(value, dtype=str(value.dtype), name=ctx.fresh(base))


# -- reads ---------------------------------------------------------------------------------
def _progression(flat: Sequence[int]) -> Optional[int]:
    """The step when the indices are one strided run (a single index has step 1), else None."""
    if len(flat) == 1:
        return 1
    step = flat[1] - flat[0]
    if step == 0 or any(b - a != step for a, b in zip(flat, flat[1:])):
        return None
    return step


@converter("Gather", attrs=["axis"])
def _gather(ctx, n):
    """Indices known at import that form one strided run (a single index, a range) are a slice
    of the data; any others a `take`, which reads them from a table (token ids, position ids)."""
    x = input_node(ctx, n)
    ax = axis_attr(n, len(x.shape), 0)
    name = n.input(1)
    if not ctx.is_const(name):
        return [ctx.emit("take", [x, input_node(ctx, n, 1)], n.outputs[0], axis=ax)]
    idx = ctx.const(name, "indices")
    shape = x.shape[:ax] + tuple(idx.shape) + x.shape[ax + 1:]
    flat = [int(i) for i in _wrapped(idx, x.shape[ax], f"axis {ax}").reshape(-1)]
    if not flat:
        return [np.zeros(shape, x.dtype)]
    step = _progression(flat)
    if step is None:
        table = np.asarray(flat, np.int64 if x.shape[ax] > np.iinfo(np.int32).max else np.int32)
        return [ctx.emit("take", [x, _const_node(ctx, table.reshape(idx.shape), name)], n.outputs[0], axis=ax)]
    end = flat[-1] + step
    y = ctx.emit("slice", [x], None, starts=(flat[0],), ends=(end if end >= 0 else -x.shape[ax] - 1,),
                 axes=(ax,), steps=(step,))
    return [ctx.emit("reshape", [y], n.outputs[0], shape=shape)]


@converter("GatherElements", attrs=["axis"])
def _gather_elements(ctx, n):
    x = input_node(ctx, n)
    ax = axis_attr(n, len(x.shape), 0)
    if ctx.is_const(n.input(1)):
        _wrapped(ctx.const(n.input(1)), x.shape[ax], f"axis {ax}")
    return [ctx.emit("gather_elements", [x, input_node(ctx, n, 1)], n.outputs[0], axis=ax)]


@folder("GatherElements")
def _fold_gather_elements(ctx, n):
    """numpy's take_along_axis: onnx.reference's GatherElements fails on a 2-D gather along axis 1
    from a larger axis (BERT's token_type_ids buffer, [1, 512] read at [1, L])."""
    x = ctx.const(n.input(0))
    ax = axis_attr(n, x.ndim, 0)
    idx = _wrapped(ctx.const(n.input(1)), x.shape[ax], f"axis {ax}")
    return [np.take_along_axis(x, idx, axis=ax)]


@converter("GatherND", attrs=["batch_dims"])
def _gather_nd(ctx, n):
    x = input_node(ctx, n)
    b = int(n.attr("batch_dims", 0))
    if ctx.is_const(n.input(1)):
        idx = ctx.const(n.input(1))
        k = idx.shape[-1] if idx.ndim else 0
        if 1 <= k <= len(x.shape) - b:
            _wrapped(idx, x.shape[b:b + k], "the data axis it addresses")
    return [ctx.emit("gather_nd", [x, input_node(ctx, n, 1)], n.outputs[0], batch_dims=b)]


# -- scatters --------------------------------------------------------------------------------
def _reduction(n: OnnxNode) -> Optional[str]:
    r = n.attr("reduction", "none")
    return None if r in REDUCTIONS else f"reduction={r!r} (supported: {', '.join(REDUCTIONS)})"


_FOLD_OP = {"add": "add", "mul": "mul", "max": "maximum", "min": "minimum"}


def _scatter_nd_const(ctx: ImportContext, n: OnnxNode, data: Node, idx: np.ndarray, reduction: str) -> Node:
    """ScatterND at indices known at import, with no scan: per target row of data, which update
    slot writes it, as a constant table; the output reads update rows through it (`take`) and
    keeps data where none writes. Duplicate targets (folded by add/mul/max/min) take one such
    table a layer, each read once, so the kernel is O(elements x the most duplicates)."""
    k = idx.shape[-1]
    lead = data.shape[:k]
    slots = _wrapped(idx.reshape(-1, k), np.asarray(lead), "the data axis it addresses")
    flat = np.ravel_multi_index(tuple(slots.T), lead) if k else np.zeros(len(slots), np.int64)
    layers: list[dict[int, int]] = []
    for m, target in enumerate(flat.tolist()):
        if reduction == "none":  # the last write wins
            if not layers:
                layers.append({})
            layers[0][target] = m
            continue
        for layer in layers:
            if target not in layer:
                layer[target] = m
                break
        else:
            layers.append({target: m})
    upd = ctx.emit("reshape", [input_node(ctx, n, 2)], None, shape=(len(flat),) + data.shape[k:])
    out = data
    last = len(layers) - 1
    rest = (1,) * (len(data.shape) - k)
    for j, layer in enumerate(layers):
        table = np.zeros(int(np.prod(lead)), np.int32)
        where = np.zeros(int(np.prod(lead)), bool)
        table[list(layer)] = list(layer.values())
        where[list(layer)] = True
        name = n.outputs[0] if j == last else None
        full = bool(where.all())  # every row written: no mask
        slots = _const_node(ctx, table.reshape(lead), "scatter_slots")
        value = ctx.emit("take", [upd, slots], name if full and reduction == "none" else None, axis=0)
        if reduction != "none":
            value = ctx.emit(_FOLD_OP[reduction], [out, value], name if full else None)
        if not full:
            mask = _const_node(ctx, where.reshape(lead + rest), "scatter_mask")
            value = ctx.emit("where", [mask, value, out], name)
        out = value
    return out


@converter("ScatterND", attrs=["reduction"], check=_reduction)
def _scatter_nd(ctx, n):
    data = input_node(ctx, n)
    reduction = REDUCTIONS[n.attr("reduction", "none")]
    if ctx.is_const(n.input(1)):
        idx = ctx.const(n.input(1))
        upd = ctx.shape(n.input(2))
        k = idx.shape[-1] if idx.ndim else 0
        if idx.ndim and 1 <= k <= len(data.shape) and tuple(upd) == idx.shape[:-1] + data.shape[k:]:
            return [_scatter_nd_const(ctx, n, data, idx, reduction)]
    return [ctx.emit("scatter_nd", [data, input_node(ctx, n, 1), input_node(ctx, n, 2)], n.outputs[0],
                     reduction=reduction)]


@converter("ScatterElements", "Scatter", attrs=["axis", "reduction"], check=_reduction)
def _scatter_elements(ctx, n):
    """ScatterElements, and Scatter (its name before opset 11): each output element scans the
    updates along the axis at its own position (ops/indexing.py)."""
    data = input_node(ctx, n)
    ax = axis_attr(n, len(data.shape), 0)
    if ctx.is_const(n.input(1)):
        _wrapped(ctx.const(n.input(1)), data.shape[ax], f"axis {ax}")
    return [ctx.emit("scatter_elements", [data, input_node(ctx, n, 1), input_node(ctx, n, 2)], n.outputs[0],
                     axis=ax, reduction=REDUCTIONS[n.attr("reduction", "none")])]


# -- one-hot, arg reductions, top-k ----------------------------------------------------------
@converter("OneHot", attrs=["axis"])
def _one_hot(ctx, n):
    depth = np.asarray(ctx.const(n.input(1), "depth")).reshape(-1)
    if depth.size != 1:
        raise Unsupported(f"depth must hold one value, got {depth.size}")
    d = int(depth[0])  # (a float depth is truncated, as onnxruntime does)
    if d < 1:
        raise Unsupported(f"depth {d}: must be at least 1")
    idx = input_node(ctx, n)
    rank = len(idx.shape) + 1
    raw = int(n.attr("axis", -1))
    if not -rank <= raw < rank:
        raise Unsupported(f"axis {raw} is out of range for the rank-{rank} output")
    return [ctx.emit("one_hot", [idx, input_node(ctx, n, 2)], n.outputs[0], depth=d, axis=raw % rank)]


def _arg_converter(op: str):
    def convert(ctx, n):
        x = input_node(ctx, n)
        ax = axis_attr(n, len(x.shape), 0)
        return [ctx.emit(op, [x], n.outputs[0], axis=ax, keepdims=bool(n.attr("keepdims", 1)),
                         select_last_index=bool(n.attr("select_last_index", 0)))]

    return convert


converter("ArgMax", attrs=["axis", "keepdims", "select_last_index"])(_arg_converter("argmax"))
converter("ArgMin", attrs=["axis", "keepdims", "select_last_index"])(_arg_converter("argmin"))


@converter("TopK", attrs=["axis", "k", "largest", "sorted"])
def _topk(ctx, n):
    """Indices by rank counting (ops/indexing.py: O(n^2) a row), values read through them; the
    output is sorted whatever `sorted` says (ONNX leaves the order open then)."""
    x = input_node(ctx, n)
    ax = axis_attr(n, len(x.shape), -1)
    k = int(n.attr("k")) if n.opset < 10 else int(np.asarray(ctx.const(n.input(1), "K")).reshape(-1)[0])
    if not 1 <= k <= x.shape[ax]:
        raise Unsupported(f"K={k} outside 1..{x.shape[ax]} (the extent of axis {ax})")
    out_values, out_indices = (list(n.outputs) + ["", ""])[:2]
    idx = ctx.emit("topk", [x], out_indices or None, k=k, axis=ax, largest=bool(n.attr("largest", 1)))
    values = ctx.emit("gather_elements", [x, idx], out_values or None, axis=ax)
    return [values, idx]


@converter("NonZero")
def _nonzero(ctx, n):
    raise Unsupported("its output shape is the count of nonzero elements, known only from the data "
                      "(a compiled graph has fixed shapes)")
