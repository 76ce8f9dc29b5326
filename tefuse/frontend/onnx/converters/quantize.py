"""ONNX quantization ops: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear and the integer
products (MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv), with ONNX's integer semantics
(ops/quantize.py: round half to even, saturation; int32 accumulation).

An integer product subtracts its zero points in int32 before the product (constants at import),
so padding and the products see the values ONNX defines; QLinear* requantize the int32 result
with (scale_a * scale_b / scale_y) computed in the scales' dtype, as ONNX's reference does.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
from onnx import helper

from ....graph.ir import Node
from ..context import ImportContext, OnnxNode, Unsupported
from ..lowbit import is_lowbit, storage_dtype
from ..registry import converter
from .common import input_node
from .nn import conv2d_attrs


def _np_name(tensor_type: int) -> str:
    return str(np.dtype(helper.tensor_dtype_to_np_dtype(int(tensor_type))))


def _zero_point(ctx: ImportContext, name: Optional[str], dtype: str) -> Node:
    """The zero point's node, or a zero of `dtype`'s storage where the node gives none."""
    if name is not None:
        return ctx.node(name)
    return ctx.scalar(0, storage_dtype(dtype))


@converter("QuantizeLinear", attrs=["axis", "saturate", "block_size", "output_dtype", "precision"])
def _quantize_linear(ctx, n):
    x, scale = input_node(ctx, n, 0), input_node(ctx, n, 1)
    zp = n.input(2)
    if zp is not None:
        dtype = ctx.logical_dtype(zp)
    elif n.attr("output_dtype", 0):
        dtype = _np_name(n.attr("output_dtype"))
    else:
        dtype = "uint8"
    if n.attr("precision", 0):
        prec = _np_name(n.attr("precision"))
        x, scale = (v if v.dtype == prec else ctx.emit("cast", [v], None, dtype=prec) for v in (x, scale))
    out = n.outputs[0]
    y = ctx.emit("quantize_linear", [x, scale, _zero_point(ctx, zp, dtype)], out, axis=int(n.attr("axis", 1)),
                 block_size=int(n.attr("block_size", 0)), dtype=dtype, saturate=bool(int(n.attr("saturate", 1))))
    if is_lowbit(dtype):
        ctx.lowbit[out] = dtype
    return [y]


# not folded at import: a dequantized weight stays an op on its quantized constant, for graph/qdq.py
# to read as int8 (or fold into a float constant at build)
@converter("DequantizeLinear", attrs=["axis", "block_size", "output_dtype"], foldable=False)
def _dequantize_linear(ctx, n):
    x, scale = input_node(ctx, n, 0), input_node(ctx, n, 1)
    src = ctx.logical_dtype(n.input(0))
    dtype = _np_name(n.attr("output_dtype")) if n.attr("output_dtype", 0) else scale.dtype
    return [ctx.emit("dequantize_linear", [x, scale, _zero_point(ctx, n.input(2), src)], n.outputs[0],
                     axis=int(n.attr("axis", 1)), block_size=int(n.attr("block_size", 0)),
                     src=src if is_lowbit(src) else "", dtype=dtype)]


@converter("DynamicQuantizeLinear")
def _dynamic_quantize_linear(ctx, n):
    """uint8 with a scale and zero point from the tensor's range, widened to hold 0."""
    x = input_node(ctx, n, 0)
    if x.dtype != "float32":
        raise Unsupported(f"DynamicQuantizeLinear of {x.dtype} (float32 only)")
    zero = ctx.scalar(0.0, "float32")
    hi = ctx.emit("maximum", [ctx.emit("reduce_max", [x], None, axes=None, keepdims=False), zero])
    lo = ctx.emit("minimum", [ctx.emit("reduce_min", [x], None, axes=None, keepdims=False), zero])
    span = ctx.emit("where", [ctx.emit("equal", [hi, lo]), ctx.scalar(1.0, "float32"), ctx.emit("sub", [hi, lo])])
    scale = ctx.emit("div", [span, ctx.scalar(255.0, "float32")], n.outputs[1] if len(n.outputs) > 1 else None)
    u8 = ctx.scalar(0, "uint8")
    zp = ctx.emit("quantize_linear", [ctx.emit("neg", [lo]), scale, u8], n.outputs[2] if len(n.outputs) > 2 else None,
                  dtype="uint8")
    y = ctx.emit("quantize_linear", [x, scale, zp], n.outputs[0], dtype="uint8")
    return [y, scale, zp]


def _centred(ctx: ImportContext, name: str, zp: Optional[str], zp_shape) -> Node:
    """int32(value) - zero point: folded for constants; `zp_shape(zp)` lays a per-row/channel
    zero point out to broadcast against the value."""
    if ctx.is_const(name) and (zp is None or ctx.is_const(zp)):
        v = ctx.const(name).astype(np.int32)
        if zp is not None:
            z = ctx.const(zp).astype(np.int32)
            v = v - z.reshape(zp_shape(z.shape))
        return ctx.b.const(np.ascontiguousarray(v), dtype="int32", name=ctx.fresh(f"{name}.centred"))
    v = ctx.emit("cast", [ctx.node(name)], None, dtype="int32")
    if zp is None:
        return v
    z = ctx.emit("cast", [ctx.node(zp)], None, dtype="int32")
    shape = zp_shape(z.shape)
    if tuple(shape) != tuple(z.shape):
        z = ctx.emit("reshape", [z], None, shape=tuple(shape))
    return ctx.emit("sub", [v, z])


def _scalar_or(*tail):
    """A zero point's broadcast shape: scalars as they are, a vector laid out as `tail`."""
    def shape(s):
        if int(np.prod(s)) == 1:
            return tuple(s)
        return tuple(-1 if t is None else t for t in tail)
    return shape


def _int_matmul(ctx, n, a: str, b: str, a_zp: Optional[str], b_zp: Optional[str]) -> Node:
    rank = len(ctx.shape(a))
    if a_zp is not None and int(np.prod(ctx.shape(a_zp))) > 1 and rank < 2:
        raise Unsupported("a per-row zero point needs a matrix a")
    av = _centred(ctx, a, a_zp, _scalar_or(None, 1))  # per row of a: [M, 1]
    bv = _centred(ctx, b, b_zp, _scalar_or(None))  # per column of b: [N]
    return ctx.emit("matmul", [av, bv], None)


def _int_conv(ctx, n, x: str, w: str, x_zp: Optional[str], w_zp: Optional[str]) -> Node:
    if x_zp is not None and int(np.prod(ctx.shape(x_zp))) > 1:
        raise Unsupported("ConvInteger/QLinearConv: x's zero point must be a scalar")
    xv = _centred(ctx, x, x_zp, _scalar_or())
    wv = _centred(ctx, w, w_zp, _scalar_or(None, 1, 1, 1))  # per output channel
    return ctx.emit("conv2d", [xv, wv], None, **conv2d_attrs(n, xv.shape, wv.shape))


@converter("MatMulInteger")
def _matmul_integer(ctx, n):
    y = _int_matmul(ctx, n, n.input(0), n.input(1), n.input(2), n.input(3))
    return [ctx.emit("identity", [y], n.outputs[0])]


_CONV_ATTRS = ["auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"]


@converter("ConvInteger", attrs=_CONV_ATTRS)
def _conv_integer(ctx, n):
    y = _int_conv(ctx, n, n.input(0), n.input(1), n.input(2), n.input(3))
    return [ctx.emit("identity", [y], n.outputs[0])]


def _multiplier(ctx: ImportContext, a_s: str, b_s: str, y_s: str) -> Node:
    """a_scale * b_scale / y_scale in the scales' dtype (folded when they are constants)."""
    if all(ctx.is_const(s) for s in (a_s, b_s, y_s)):
        a, b, y = (ctx.const(s) for s in (a_s, b_s, y_s))
        m = np.asarray((a * b) / y)
        return ctx.b.const(m.reshape(-1) if m.size > 1 else m, dtype=str(m.dtype), name=ctx.fresh("multiplier"))
    m = ctx.emit("div", [ctx.emit("mul", [ctx.node(a_s), ctx.node(b_s)]), ctx.node(y_s)])
    if len(m.shape) > 1:
        m = ctx.emit("reshape", [m], None, shape=(-1,))
    return m


def _requantize(ctx, n, acc: Node, mult: Node, y_zp: Optional[str], axis: int, like: str) -> list:
    dtype = ctx.logical_dtype(y_zp) if y_zp is not None else ctx.logical_dtype(like)
    if dtype not in ("int8", "uint8"):
        raise Unsupported(f"{n.op_type} to {dtype} (int8 and uint8 only)")
    return [ctx.emit("requantize", [acc, mult, _zero_point(ctx, y_zp, dtype)], n.outputs[0],
                     axis=axis if int(np.prod(mult.shape)) > 1 else 0, dtype=dtype)]


@converter("QLinearMatMul")
def _qlinear_matmul(ctx, n):
    a, a_s, a_zp, b, b_s, b_zp, y_s, y_zp = (n.input(k) for k in range(8))
    acc = _int_matmul(ctx, n, a, b, a_zp, b_zp)
    return _requantize(ctx, n, acc, _multiplier(ctx, a_s, b_s, y_s), y_zp, len(acc.shape) - 1, a)


@converter("QLinearConv", attrs=_CONV_ATTRS)
def _qlinear_conv(ctx, n):
    x, x_s, x_zp, w, w_s, w_zp, y_s, y_zp = (n.input(k) for k in range(8))
    acc = _int_conv(ctx, n, x, w, x_zp, w_zp)
    if n.input(8) is not None:
        acc = ctx.emit("bias_add", [acc, ctx.node(n.input(8))], None, axis=1)
    return _requantize(ctx, n, acc, _multiplier(ctx, x_s, w_s, y_s), y_zp, 1, x)
