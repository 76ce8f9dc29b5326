"""Low-precision formats TVM's codegen does not convert correctly (float8 variants, float4, e8m0,
int4/int2), as elementwise ops on a one-byte storage.

Why: a float8 `tir.Cast` on llvm rounds and saturates differently from ONNX/ml_dtypes, float4
does not compile, and TVM packs int4/int2 tensors (8 or 4 values a byte) where numpy/ml_dtypes
keep one value a byte. Here a float8/float4/e8m0 value is its bit pattern in a uint8 tensor and
an int4/int2 value is its value in an int8/uint8 tensor; these ops convert with integer
arithmetic on float32 bits, exactly as ml_dtypes does (round to nearest even; ONNX's saturation):

    fp_decode(x: uint8, format)              -> float32
    fp_encode(x: float32, format, saturate, round_mode) -> uint8   (round_mode: e8m0 only)
    int_wrap(x: float/int, bits, signed)     -> int8 / uint8  (truncate toward zero, then wrap)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from tvm import tirx as tir

from ..errors import OpError
from .registry import OpPattern, register_op
from .value import Value, bind, lazy


@dataclass(frozen=True)
class MiniFloat:
    """A small float format: exponent and mantissa bits, bias, and how it spells NaN/inf."""

    name: str
    exp_bits: int
    man_bits: int
    bias: int
    max_code: int  # largest finite magnitude code (sign bit clear)
    nan_code: Optional[int]  # the NaN a conversion writes (None: the format has none)
    inf_code: Optional[int]  # +inf's code, or None
    uz: bool  # "fnuz": no negative zero; 0x80 is the only NaN

    @property
    def width(self) -> int:
        return 1 + self.exp_bits + self.man_bits


FORMATS = {f.name: f for f in (
    MiniFloat("float8_e4m3fn", 4, 3, 7, 0x7E, 0x7F, None, False),
    MiniFloat("float8_e4m3fnuz", 4, 3, 8, 0x7F, 0x80, None, True),
    MiniFloat("float8_e5m2", 5, 2, 15, 0x7B, 0x7F, 0x7C, False),
    MiniFloat("float8_e5m2fnuz", 5, 2, 16, 0x7F, 0x80, None, True),
    MiniFloat("float4_e2m1fn", 2, 1, 1, 0x7, None, None, False),
)}
E8M0 = "float8_e8m0fnu"
FLOAT_FORMATS = (*FORMATS, E8M0)
# the one-byte storage of each low-precision type, and the integer ones' widths
STORAGE = {**{f: "uint8" for f in FLOAT_FORMATS}, "int4": "int8", "uint4": "uint8", "int2": "int8", "uint2": "uint8"}
INT_BITS = {"int4": (4, True), "uint4": (4, False), "int2": (2, True), "uint2": (2, False)}

U32, I32, F32, U8 = "uint32", "int32", "float32", "uint8"


def _u(v: int) -> tir.PrimExpr:
    return tir.const(v, U32)


def _pow2(k: int) -> tir.PrimExpr:
    """2 ** k as an exact float32 constant (k in the normal range)."""
    return tir.const(2.0 ** k, F32)


def _decode(fmt: MiniFloat, code):
    c = tir.Cast(U32, code)
    m = fmt.exp_bits + fmt.man_bits
    sign = tir.bitwise_and(tir.shift_right(c, _u(m)), _u(1))
    mag = tir.bitwise_and(c, _u((1 << m) - 1))
    e = tir.shift_right(mag, _u(fmt.man_bits))
    man = tir.bitwise_and(mag, _u((1 << fmt.man_bits) - 1))
    sub = tir.Cast(F32, man) * _pow2(1 - fmt.bias - fmt.man_bits)
    # normal: (2^M + man) * 2^(e - bias - M): the power of two from the exponent field's bits
    p2 = tir.reinterpret(F32, tir.shift_left(tir.Cast(U32, tir.Cast(I32, e) + (127 - fmt.bias - fmt.man_bits)),
                                             _u(23)))
    norm = tir.Cast(F32, man + _u(1 << fmt.man_bits)) * p2
    val = tir.Select(e == _u(0), sub, norm)
    val = tir.Select(sign == _u(1), val * tir.const(-1.0, F32), val)  # (0 - 0 would lose -0)
    # NaN by its bits: a NaN literal never equals itself, so a tensor intrinsic's description
    # holding this decode (schedules/cuda/intrin/wgmma.py) would not match the product's block
    nan = tir.reinterpret(F32, _u(0x7FC00000))
    if fmt.uz:
        return tir.Select(c == _u(0x80), nan, val)
    if fmt.inf_code is not None:  # e5m2: exponent all ones is inf (mantissa 0) or NaN
        inf = tir.Select(sign == _u(1), tir.const(float("-inf"), F32), tir.const(float("inf"), F32))
        top = e == _u((1 << fmt.exp_bits) - 1)
        return tir.Select(top, tir.Select(man == _u(0), inf, nan), val)
    if fmt.nan_code is not None:  # e4m3fn: only S.1111.111 is NaN
        return tir.Select(mag == _u(fmt.nan_code), nan, val)
    return val


def _encode(fmt: MiniFloat, x, saturate: bool):
    """x is read by a dozen selects and comparisons: bound once (`bind`), or a chain computing it
    (a fused epilogue's dequantize, bias, residual and ReLU) would be repeated in every one of
    them: CUDA's wgmma kernels compile with TIR's CSE off, and nvcc does not merge the copies
    across the branches the selects become."""
    return bind(x, lambda v: _encode_bits(fmt, v, saturate))


def _encode_bits(fmt: MiniFloat, x, saturate: bool):
    bits = tir.reinterpret(U32, x)
    m = fmt.exp_bits + fmt.man_bits
    sign = tir.shift_right(bits, _u(31))
    a = tir.bitwise_and(bits, _u(0x7FFFFFFF))
    f = tir.reinterpret(F32, a)
    emin = 1 - fmt.bias
    # below the smallest normal: round |x| * 2^(M - emin) to an integer, ties to even (the
    # default rounding mode); 2^M comes out as the smallest normal's code, as it should
    sub = tir.Cast(U32, tir.nearbyint(f * _pow2(fmt.man_bits - emin)))
    shift = 23 - fmt.man_bits
    r = a + _u((1 << (shift - 1)) - 1) + tir.bitwise_and(tir.shift_right(a, _u(shift)), _u(1))
    norm = tir.shift_right(r, _u(shift)) - _u((127 - fmt.bias) << fmt.man_bits)
    is_sub = a < _u((127 + emin) << 23)
    code = tir.Select(is_sub, sub, tir.Select(a >= _u(0x7F800000), _u(0xFFFF), norm))
    over = code > _u(fmt.max_code)
    if saturate or (fmt.nan_code is None and fmt.inf_code is None):
        big = _u(fmt.max_code)
    elif fmt.inf_code is not None:
        big = _u(fmt.inf_code)
    else:
        big = _u(fmt.nan_code & ((1 << m) - 1)) if not fmt.uz else _u(0)
    mag = tir.Select(over, big, code)
    signed = tir.bitwise_or(mag, tir.shift_left(sign, _u(m)))
    is_nan = a > _u(0x7F800000)
    if fmt.uz:
        # no negative zero, and 0x80 is NaN: overflow without saturation is NaN too
        out = tir.Select(mag == _u(0), _u(0), signed)
        if not saturate:
            out = tir.Select(over, _u(0x80), out)
        out = tir.Select(is_nan, _u(0x80), out)
    elif fmt.nan_code is None:  # float4 has no NaN: ml_dtypes writes a zero of the opposite sign
        out = tir.Select(is_nan, tir.shift_left(tir.bitwise_xor(sign, _u(1)), _u(m)), signed)
    else:
        out = tir.Select(is_nan, tir.bitwise_or(_u(fmt.nan_code), tir.shift_left(sign, _u(m))), signed)
    return tir.Cast(U8, out)


def _decode_e8m0(code):
    c = tir.Cast(U32, code)
    v = tir.reinterpret(F32, tir.Select(c == _u(0), _u(0x400000), tir.shift_left(c, _u(23))))
    return tir.Select(c == _u(0xFF), tir.const(float("nan"), F32), v)


def _encode_e8m0(x, saturate: bool, round_mode: str):
    """onnx.numpy_helper.to_float8e8m0: the float32 exponent field, rounded by the fraction."""
    bits = tir.reinterpret(U32, x)
    e = tir.bitwise_and(tir.shift_right(bits, _u(23)), _u(0xFF))
    special = e == _u(0xFF)
    if round_mode == "up":
        up = tir.bitwise_and(bits, _u(0x7FFFFF)) > _u(0)
    elif round_mode == "nearest":
        g = tir.bitwise_and(bits, _u(0x400000)) > _u(0)
        r = tir.bitwise_and(bits, _u(0x200000)) > _u(0)
        s = tir.bitwise_and(bits, _u(0x1FFFFF)) > _u(0)
        up = tir.And(g, tir.Or(tir.Or(r, s), e > _u(0)))
    elif round_mode == "down":
        up = tir.const(False, "bool")
    else:
        raise OpError(f"fp_encode: unknown round_mode {round_mode!r}")
    if saturate:
        up = tir.And(up, e != _u(0xFE))
    out = e + tir.Select(up, _u(1), _u(0))
    return tir.Cast(U8, tir.Select(special, _u(0xFF), tir.bitwise_and(out, _u(0xFF))))


def decode(name: str, code) -> tir.PrimExpr:
    """The float32 value of one float8/float4/e8m0 code (a uint8 expression), exactly."""
    return _decode_e8m0(code) if _format(name) == E8M0 else _decode(FORMATS[name], code)


def encode(name: str, x, saturate: bool = True) -> tir.PrimExpr:
    """The float8/float4 code (uint8) of a float32 expression: round to nearest even, saturating
    to the largest finite value when `saturate`."""
    if _format(name) == E8M0:
        return _encode_e8m0(x, saturate, "up")
    return _encode(FORMATS[name], x, saturate)


# float8 formats whose conversion a device may do in hardware (CUDA sm_89+: cuda_fp8.h's
# cvt.rn.satfinite.e4m3x2.f32 / cvt.rn.f16x2.e4m3x2): a conversion of these is a call that
# codegen/float8.py makes the hardware's or the exact rule above for the target
NATIVE_FORMATS = ("float8_e4m3fn", "float8_e5m2")
DECODE_CALL = "tefuse_float8_decode_"  # + format: (code uint8) -> float32
ENCODE_CALL = "tefuse_float8_encode_"  # + format: (float32) -> code uint8, saturating


def convert_decode(name: str, code) -> tir.PrimExpr:
    """`decode`, as a call a target lowers (codegen/float8.py) where the format may be native."""
    if name in NATIVE_FORMATS:
        return tir.call_pure_extern(F32, DECODE_CALL + name, code)
    return decode(name, code)


def convert_encode(name: str, x, saturate: bool = True) -> tir.PrimExpr:
    """`encode`, as a call a target lowers where the format may be native (saturating only:
    the hardware's non-saturating conversion differs from ONNX's)."""
    if name in NATIVE_FORMATS and saturate:
        return tir.call_pure_extern(U8, ENCODE_CALL + name, x)
    return encode(name, x, saturate)


def _format(name: str) -> str:
    if name not in FLOAT_FORMATS:
        raise OpError(f"unknown low-precision format {name!r}; known: {sorted(FLOAT_FORMATS)}")
    return name


@register_op("fp_decode", OpPattern.ELEMWISE, num_inputs=1, attrs={"format": "float8_e4m3fn"})
def fp_decode(inputs: Sequence[Value], attrs: dict) -> Value:
    """float8/float4/e8m0 bit patterns (uint8) to float32, exactly."""
    (x,) = inputs
    if x.dtype != U8:
        raise OpError(f"fp_decode: expects the uint8 bit patterns, got {x.dtype}")
    name = _format(attrs["format"])
    return lazy(x.shape, F32, lambda *i: convert_decode(name, x(*i)))


@register_op("fp_encode", OpPattern.ELEMWISE, num_inputs=1,
             attrs={"format": "float8_e4m3fn", "saturate": True, "round_mode": "up"})
def fp_encode(inputs: Sequence[Value], attrs: dict) -> Value:
    """float32 to float8/float4/e8m0 bit patterns (uint8): round to nearest even (e8m0: by
    round_mode), saturating to the largest finite value when `saturate` (ONNX Cast's rule)."""
    (x,) = inputs
    if x.dtype != F32:
        raise OpError(f"fp_encode: expects float32, got {x.dtype}")
    name, sat = _format(attrs["format"]), bool(attrs["saturate"])
    if name == E8M0:
        return lazy(x.shape, U8, lambda *i: _encode_e8m0(x(*i), sat, attrs["round_mode"]))
    return lazy(x.shape, U8, lambda *i: convert_encode(name, x(*i), sat))


@register_op("int_wrap", OpPattern.ELEMWISE, num_inputs=1, attrs={"bits": 4, "signed": True})
def int_wrap(inputs: Sequence[Value], attrs: dict) -> Value:
    """To a `bits`-wide integer kept one a byte (int8/uint8), as ml_dtypes converts: floats
    truncate toward zero (NaN gives 0), then the value wraps modulo 2 ** bits."""
    (x,) = inputs
    bits, signed = int(attrs["bits"]), bool(attrs["signed"])
    if not 1 <= bits <= 7:
        raise OpError(f"int_wrap: bits must be 1..7, got {bits}")
    out = "int8" if signed else "uint8"
    mask, half = (1 << bits) - 1, 1 << (bits - 1)
    is_float = x.dtype.startswith(("float", "bfloat"))

    def rule(*i):
        v = x(*i)
        if is_float:
            fd = "float64" if x.dtype == "float64" else "float32"
            v32 = tir.Cast(fd, v) if x.dtype != fd else v
            ok = tir.And(tir.abs(v32) < tir.const(2.0 ** 62, fd), tir.Not(tir.isnan(v32)))
            w = tir.Cast("int64", tir.Select(ok, v32, tir.const(0.0, fd)))
        else:
            w = tir.Cast("int64", v)
        w = tir.bitwise_and(w, tir.const(mask, "int64"))
        if signed:
            w = tir.bitwise_xor(w, tir.const(half, "int64")) - tir.const(half, "int64")
        return tir.Cast(out, w)

    return lazy(x.shape, out, rule)
