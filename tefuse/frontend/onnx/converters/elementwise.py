"""Elementwise ONNX ops: unary, binary and variadic arithmetic, Clip, Cast, activations."""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from ..context import ImportContext, OnnxNode, Unsupported
from ..lowbit import FLOATS as LOW_FLOATS, INT_BITS, is_lowbit
from ..registry import ConvertFn, converter
from .common import main_dtype, binary_operand, input_node

_UNARY = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Exp": "exp", "Log": "log",
          "Sqrt": "sqrt", "Abs": "abs", "Neg": "neg", "Reciprocal": "reciprocal", "Erf": "erf",
          "Floor": "floor", "Ceil": "ceil", "Softplus": "softplus", "HardSwish": "hardswish"}


def _unary_converter(op: str) -> ConvertFn:
    def fn(ctx: ImportContext, n: OnnxNode) -> list:
        return [ctx.emit(op, [input_node(ctx, n)], n.outputs[0])]
    return fn


for _onnx, _op in _UNARY.items():
    converter(_onnx)(_unary_converter(_op))


@converter("LeakyRelu", attrs=["alpha"])
def _leaky(ctx, n):
    return [ctx.emit("leaky_relu", [input_node(ctx, n)], n.outputs[0], alpha=float(n.attr("alpha", 0.01)))]


@converter("Elu", attrs=["alpha"])
def _elu(ctx, n):
    return [ctx.emit("elu", [input_node(ctx, n)], n.outputs[0], alpha=float(n.attr("alpha", 1.0)))]


@converter("Selu", attrs=["alpha", "gamma"])
def _selu(ctx, n):
    x = input_node(ctx, n)
    e = ctx.emit("elu", [x], None, alpha=float(n.attr("alpha", 1.67326319217681884765625)))
    return [ctx.emit("mul", [e, ctx.scalar(float(n.attr("gamma", 1.05070102214813232421875)), x.dtype)],
                     n.outputs[0])]


@converter("PRelu")
def _prelu(ctx, n):
    """x where x >= 0, slope * x elsewhere (slope broadcast to x; NaN stays NaN)."""
    x = input_node(ctx, n)
    slope = binary_operand(ctx, n.input(1), x.dtype)
    neg = ctx.emit("less", [x, ctx.scalar(0.0, x.dtype)])
    return [ctx.emit("where", [neg, ctx.emit("mul", [x, slope]), x], n.outputs[0])]


@converter("HardSigmoid", attrs=["alpha", "beta"])
def _hardsigmoid(ctx, n):
    return [ctx.emit("hardsigmoid", [input_node(ctx, n)], n.outputs[0], alpha=float(n.attr("alpha", 0.2)),
                     beta=float(n.attr("beta", 0.5)))]


def _check_gelu(n: OnnxNode) -> Optional[str]:
    a = n.attr("approximate", "none")
    return None if a in ("none", "tanh") else f"approximate={a!r}"


@converter("Gelu", attrs=["approximate"], check=_check_gelu)
def _gelu(ctx, n):
    approx = n.attr("approximate", "none")
    return [ctx.emit("gelu", [input_node(ctx, n)], n.outputs[0], approximate=approx)]


@converter("Clip", attrs=["min", "max"])
def _clip(ctx, n):
    x = input_node(ctx, n)
    if n.opset < 11:
        return [ctx.emit("clip", [x], n.outputs[0], min=float(n.attr("min", -math.inf)),
                         max=float(n.attr("max", math.inf)))]
    lo, hi = n.input(1), n.input(2)
    if (lo is None or ctx.is_const(lo)) and (hi is None or ctx.is_const(hi)):
        bounds = {}
        if lo is not None:
            bounds["min"] = float(ctx.const(lo).reshape(()))
        if hi is not None:
            bounds["max"] = float(ctx.const(hi).reshape(()))
        return [ctx.emit("clip", [x], n.outputs[0], **bounds)]
    y = x  # run-time bounds: min(max(x, lo), hi), so min > max gives max (ONNX, numpy)
    if lo is not None:
        y = ctx.emit("maximum", [y, ctx.node(lo)], None if hi is not None else n.outputs[0])
    if hi is not None:
        y = ctx.emit("minimum", [y, ctx.node(hi)], n.outputs[0])
    return [y]


_BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Pow": "pow"}


def _is_int(dtype: str) -> bool:
    return dtype.startswith(("int", "uint"))


def _pow(ctx: ImportContext, n: OnnxNode) -> list:
    """Pow(T, T1) -> T, as onnx.reference computes it: numpy's power of the two operands, cast to
    the base's type (an integer base with a float exponent: in float64, truncated)."""
    a, b = n.input(0), n.input(1)
    ta, tb = ctx.dtype(a), ctx.dtype(b)
    if _is_int(ta) and not _is_int(tb):
        f = [ctx.emit("cast", [ctx.node(v)], None, dtype="float64") if ctx.dtype(v) != "float64" else ctx.node(v)
             for v in (a, b)]
        return [ctx.emit("cast", [ctx.emit("pow", f)], n.outputs[0], dtype=ta)]
    if ta == tb or ctx.is_const(b):
        return [ctx.emit("pow", [ctx.node(a), binary_operand(ctx, b, ta)], n.outputs[0])]
    return [ctx.emit("pow", [ctx.node(a), ctx.emit("cast", [ctx.node(b)], None, dtype=ta)], n.outputs[0])]


def _binary_converter(op: str) -> ConvertFn:
    def fn(ctx: ImportContext, n: OnnxNode) -> list:
        if op == "pow":
            return _pow(ctx, n)
        a, b = n.input(0), n.input(1)
        dt = main_dtype(ctx, [a, b])
        return [ctx.emit(op, [binary_operand(ctx, a, dt), binary_operand(ctx, b, dt)], n.outputs[0])]
    return fn


for _onnx, _op in _BINARY.items():
    converter(_onnx)(_binary_converter(_op))


def _variadic_converter(op: str) -> ConvertFn:
    def fn(ctx: ImportContext, n: OnnxNode) -> list:
        names = [i for i in n.inputs if i]
        dt = main_dtype(ctx, names)
        xs = [binary_operand(ctx, i, dt) for i in names]
        if len(xs) == 1:
            return [xs[0]]
        if op == "add" and len(xs) > 2:
            return [ctx.emit("sum_n", xs, n.outputs[0])]
        acc = xs[0]
        for k, x in enumerate(xs[1:], start=2):
            acc = ctx.emit(op, [acc, x], n.outputs[0] if k == len(xs) else None)
        return [acc]
    return fn


_COMPARE = {"Less": "less", "Greater": "greater", "LessOrEqual": "less_equal",
            "GreaterOrEqual": "greater_equal", "Equal": "equal"}

for _onnx, _op in _COMPARE.items():
    converter(_onnx)(_binary_converter(_op))


_LOGICAL = {"And": "logical_and", "Or": "logical_or", "Xor": "logical_xor"}

for _onnx, _op in _LOGICAL.items():
    converter(_onnx)(_binary_converter(_op))
converter("Not")(_unary_converter("logical_not"))


@converter("Where")
def _where(ctx, n):
    c, a, b = n.input(0), n.input(1), n.input(2)
    dt = main_dtype(ctx, [a, b])
    return [ctx.emit("where", [ctx.node(c), binary_operand(ctx, a, dt), binary_operand(ctx, b, dt)], n.outputs[0])]


converter("Sum")(_variadic_converter("add"))
converter("Max")(_variadic_converter("maximum"))
converter("Min")(_variadic_converter("minimum"))


def _cast_to(ctx: ImportContext, n: OnnxNode, dst: str) -> list:
    """Cast to numpy dtype name `dst`; float8/float4/e8m0/int4/int2 on either side go through
    ops/lowbit.py's exact conversions on their byte storage (see ../lowbit.py)."""
    src = ctx.logical_dtype(n.input(0))
    x = input_node(ctx, n)
    out = n.outputs[0]
    if src == dst:
        if is_lowbit(dst) and not ctx.is_const(n.input(0)):
            ctx.lowbit[out] = dst
        return [x]
    v = x
    if src in LOW_FLOATS:
        v = ctx.emit("fp_decode", [x], None, format=src)
    if dst in LOW_FLOATS:
        exact = {"float32", "float16", "bfloat16", "bool", "int8", "uint8", "int16", "uint16", *INT_BITS}
        if src not in exact and src not in LOW_FLOATS:
            raise Unsupported(f"Cast from {src} to {dst}: only float32/float16/bfloat16 and small integer "
                              f"sources are converted exactly (another would round twice)")
        if v.dtype != "float32":
            v = ctx.emit("cast", [v], None, dtype="float32")
        y = ctx.emit("fp_encode", [v], out, format=dst, saturate=bool(int(n.attr("saturate", 1))),
                     round_mode=str(n.attr("round_mode", "up")))
        ctx.lowbit[out] = dst
        return [y]
    if dst in INT_BITS:
        bits, signed = INT_BITS[dst]
        y = ctx.emit("int_wrap", [v], out, bits=bits, signed=signed)
        ctx.lowbit[out] = dst
        return [y]
    if v is x and is_lowbit(src) and not ctx.is_const(n.input(0)):
        return [ctx.emit("cast", [v], out, dtype=dst)]  # a node of its own: x's holds `src`
    return [v if v.dtype == dst else ctx.emit("cast", [v], out, dtype=dst)]


@converter("Cast", attrs=["to", "saturate", "round_mode"])
def _cast(ctx, n):
    from onnx import helper
    return _cast_to(ctx, n, str(np.dtype(helper.tensor_dtype_to_np_dtype(int(n.attr("to"))))))


@converter("CastLike", attrs=["saturate", "round_mode"])
def _cast_like(ctx, n):
    return _cast_to(ctx, n, ctx.logical_dtype(n.input(1)))
