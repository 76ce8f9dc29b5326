"""float8 conversions: the device's instruction where it has one, the exact integer rule elsewhere.

Why: ops/lowbit.py converts float8 by integer arithmetic on float32 bits, exact on every target
(ONNX's rounding and saturation, as ml_dtypes), 15-25 instructions an element. A fused fp8
epilogue (dequantize, bias, residual, ReLU, quantize) spent more of its time there than in its
product. CUDA devices from sm_89 convert in one instruction (`cvt.rn.satfinite.e4m3x2.f32`,
`cvt.rn.f16x2.e4m3x2`), which TVM's CUDA codegen emits for a float8 `Cast` (cuda_fp8.h, two or
four lanes at once in a vectorized loop).

What: the ops write a float8 conversion of a native format as a call (`lowbit.convert_decode`,
`convert_encode`); `lower_float8` rewrites each call of a scheduled module before codegen: into
the float8 Cast where `native(target)`, else into lowbit's exact rule, its operand bound once.
The two agree on every value (round to nearest even, saturating to the largest finite value,
infinities included) but a NaN's sign: the instruction writes the positive NaN.
"""
from __future__ import annotations

import tvm
from tvm import tirx
from tvm.ir.expr import Call, StringImm
from tvm_ffi import VisitInterrupt, structural_map, structural_walk

from ..ops.lowbit import DECODE_CALL, ENCODE_CALL, decode, encode
from ..ops.value import bind
from ..target import device_caps

def native(target) -> bool:
    """Whether `target`'s device converts float8 in hardware."""
    return device_caps(target).has_float8_convert


def _conversion(call) -> tuple:
    """(kind, format) of a conversion call, or (None, None)."""
    if not call.args or not isinstance(call.args[0], StringImm):
        return None, None
    name = call.args[0].value
    for kind, prefix in (("decode", DECODE_CALL), ("encode", ENCODE_CALL)):
        if name.startswith(prefix):
            return kind, name[len(prefix):]
    return None, None


def lower_expr(expr, hardware: bool):
    """`expr` with every conversion call made the float8 Cast (`hardware`) or the exact rule."""
    def on_call(call):
        kind, fmt = _conversion(call)
        if kind is None:
            return call
        arg = call.args[1]
        if kind == "decode":
            if hardware:
                return tirx.Cast("float32", tirx.reinterpret(fmt, arg))
            # the code bound: its load stays out of the decode's selects (selects, not branches)
            return bind(arg, lambda c: decode(fmt, c), always=True)
        if hardware:
            return tirx.reinterpret("uint8", tirx.Cast(fmt, arg))
        return encode(fmt, arg, True)

    return structural_map(expr, (Call, on_call))


def _has_conversion(func) -> bool:
    def on_call(call):
        return VisitInterrupt(call) if _conversion(call)[0] is not None else None

    return structural_walk(func.body, (Call, on_call)) is not None


def lower_float8(mod: tvm.IRModule, target) -> tvm.IRModule:
    """`mod` with its float8 conversion calls lowered for `target` (the module docstring)."""
    hardware = native(target)
    funcs = {gv: f for gv, f in mod.functions.items()
             if isinstance(f, tirx.PrimFunc) and _has_conversion(f)}
    if not funcs:
        return mod
    lowered = dict(mod.functions)
    for gv, f in funcs.items():
        lowered[gv] = f.with_body(lower_expr(f.body, hardware))
    return tvm.IRModule(lowered, attrs=mod.attrs)
