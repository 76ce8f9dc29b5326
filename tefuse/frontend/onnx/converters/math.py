"""Elementwise math ONNX ops: trigonometric and hyperbolic functions, Sign, Round, Mod, BitShift,
the IsNaN / IsInf predicates and the activations Mish, Softsign, ThresholdedRelu, Celu, Shrink.

Each maps onto one elementwise op of tefuse/ops/elemwise.py (its scalar rule is there); the
tables below say which, and with which attributes.
"""
from __future__ import annotations

from typing import Callable, Optional

from ..context import ImportContext, OnnxNode
from ..registry import ConvertFn, converter
from .common import binary_operand, input_node, main_dtype

_UNARY = {"Sin": "sin", "Cos": "cos", "Tan": "tan", "Asin": "asin", "Acos": "acos", "Atan": "atan",
          "Sinh": "sinh", "Cosh": "cosh", "Asinh": "asinh", "Acosh": "acosh", "Atanh": "atanh",
          "Sign": "sign", "Round": "round", "Mish": "mish", "Softsign": "softsign", "IsNaN": "isnan"}

# ONNX op -> (tefuse op, {ONNX attribute: (tefuse attribute, default, conversion)})
Attrs = dict[str, tuple[str, object, Callable]]
_WITH_ATTRS: dict[str, tuple[str, Attrs]] = {
    "ThresholdedRelu": ("thresholded_relu", {"alpha": ("alpha", 1.0, float)}),
    "Celu": ("celu", {"alpha": ("alpha", 1.0, float)}),
    "Shrink": ("shrink", {"bias": ("bias", 0.0, float), "lambd": ("lambd", 0.5, float)}),
    "IsInf": ("isinf", {"detect_positive": ("detect_positive", 1, lambda v: bool(int(v))),
                        "detect_negative": ("detect_negative", 1, lambda v: bool(int(v)))}),
}
_BINARY_WITH_ATTRS: dict[str, tuple[str, Attrs]] = {
    "Mod": ("mod", {"fmod": ("fmod", 0, int)}),
    "BitShift": ("bitshift", {"direction": ("direction", "LEFT", lambda v: str(v).lower())}),
}


def _attrs(n: OnnxNode, table: Attrs) -> dict:
    return {ours: conv(n.attr(key, default)) for key, (ours, default, conv) in table.items()}


def _unary(op: str, table: Attrs) -> ConvertFn:
    def fn(ctx: ImportContext, n: OnnxNode) -> list:
        return [ctx.emit(op, [input_node(ctx, n)], n.outputs[0], **_attrs(n, table))]
    return fn


def _binary(op: str, table: Attrs) -> ConvertFn:
    def fn(ctx: ImportContext, n: OnnxNode) -> list:
        a, b = n.input(0), n.input(1)
        dt = main_dtype(ctx, [a, b])
        return [ctx.emit(op, [binary_operand(ctx, a, dt), binary_operand(ctx, b, dt)], n.outputs[0],
                         **_attrs(n, table))]
    return fn


def _check_fmod(n: OnnxNode) -> Optional[str]:
    return None if int(n.attr("fmod", 0)) in (0, 1) else f"fmod={n.attr('fmod')} (0 or 1)"


def _check_direction(n: OnnxNode) -> Optional[str]:
    d = n.attr("direction")
    return None if d in ("LEFT", "RIGHT") else f"direction={d!r} (LEFT or RIGHT)"


_CHECKS = {"Mod": _check_fmod, "BitShift": _check_direction}

for _onnx, _op in _UNARY.items():
    converter(_onnx)(_unary(_op, {}))
for _onnx, (_op, _table) in _WITH_ATTRS.items():
    converter(_onnx, attrs=list(_table))(_unary(_op, _table))
for _onnx, (_op, _table) in _BINARY_WITH_ATTRS.items():
    converter(_onnx, attrs=list(_table), check=_CHECKS.get(_onnx))(_binary(_op, _table))
