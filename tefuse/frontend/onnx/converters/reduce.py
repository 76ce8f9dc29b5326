"""Reduction ONNX ops: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1,
ReduceL2, ReduceSumSquare, ReduceLogSum (one `reduce_*` op each) and ReduceLogSumExp (a max,
then a sum of shifted exponentials: two kernels, stable for any magnitude)."""
from __future__ import annotations

from typing import Optional

from ....graph.ir import Node
from ..context import ImportContext, OnnxNode
from ..registry import ConvertFn, converter
from .common import axes_arg, input_node

# ONNX op -> (tefuse op, the opset from which `axes` is an input rather than an attribute)
_REDUCE = {"ReduceSum": ("reduce_sum", 13), "ReduceMean": ("reduce_mean", 18), "ReduceMax": ("reduce_max", 18),
           "ReduceMin": ("reduce_min", 18), "ReduceProd": ("reduce_prod", 18), "ReduceL1": ("reduce_l1", 18),
           "ReduceL2": ("reduce_l2", 18), "ReduceSumSquare": ("reduce_sum_square", 18),
           "ReduceLogSum": ("reduce_log_sum", 18)}
_ATTRS = ["axes", "keepdims", "noop_with_empty_axes"]
# what a reduction over no axes leaves (noop_with_empty_axes=1: "ReduceSumSquare acts as a
# vanilla Square"): the elementwise part of each, exactly (|x|, not sqrt(x * x), which overflows)
_NOOP = {"ReduceL1": "abs", "ReduceL2": "abs", "ReduceSumSquare": "square", "ReduceLogSum": "log"}


def _noop(ctx: ImportContext, n: OnnxNode, x: Node) -> list:
    op = _NOOP.get(n.op_type)
    return [x if op is None else ctx.emit(op, [x], n.outputs[0])]


def _reduce_attrs(ctx: ImportContext, n: OnnxNode, axes_input_from: int) -> Optional[dict]:
    """The reduction's attrs: axes (None: all) and keepdims; None where the node is a no-op
    (no axes given and noop_with_empty_axes=1)."""
    axes = axes_arg(ctx, n, axes_input_from)
    if not axes:
        if int(n.attr("noop_with_empty_axes", 0)):
            return None
        axes = None
    return dict(axes=None if axes is None else tuple(axes), keepdims=bool(n.attr("keepdims", 1)))


def _reduce_converter(op: str, axes_input_from: int) -> ConvertFn:
    def fn(ctx: ImportContext, n: OnnxNode) -> list:
        x = input_node(ctx, n)
        attrs = _reduce_attrs(ctx, n, axes_input_from)
        if attrs is None:
            return _noop(ctx, n, x)
        if x.dtype == "bool" and op in ("reduce_max", "reduce_min"):  # any / all, through uint8
            r = ctx.emit(op, [ctx.emit("cast", [x], None, dtype="uint8")], None, **attrs)
            return [ctx.emit("cast", [r], n.outputs[0], dtype="bool")]
        return [ctx.emit(op, [x], n.outputs[0], **attrs)]
    return fn


for _onnx, (_op, _since) in _REDUCE.items():
    converter(_onnx, attrs=_ATTRS)(_reduce_converter(_op, _since))


@converter("ReduceLogSumExp", attrs=_ATTRS)
def _reduce_log_sum_exp(ctx, n):
    """m + log(sum(exp(x - m))) with m the max over the axes (where it is finite: an all -inf or
    +inf row keeps its -inf / inf), computed in float32 for half inputs and float64 for integer
    ones (cast back at the end, as onnx.reference truncates)."""
    x = input_node(ctx, n)
    attrs = _reduce_attrs(ctx, n, 18)
    if attrs is None:
        return _noop(ctx, n, x)
    work = {"float16": "float32", "bfloat16": "float32", "float32": "float32"}.get(x.dtype, "float64")
    xs = x if x.dtype == work else ctx.emit("cast", [x], None, dtype=work)
    m = ctx.emit("reduce_max", [xs], None, axes=attrs["axes"], keepdims=True)
    shift = ctx.emit("where", [ctx.emit("isinf", [m]), ctx.scalar(0.0, work), m])
    e = ctx.emit("exp", [ctx.emit("sub", [xs, shift])])
    s = ctx.emit("reduce_sum", [e], None, **attrs)
    if not attrs["keepdims"]:
        shift = ctx.emit("reshape", [shift], None, shape=s.shape)
    last = work == x.dtype
    y: Node = ctx.emit("add", [ctx.emit("log", [s]), shift], n.outputs[0] if last else None)
    return [y if last else ctx.emit("cast", [y], n.outputs[0], dtype=x.dtype)]
