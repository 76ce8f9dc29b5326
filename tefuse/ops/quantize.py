"""Linear quantization as ONNX specifies it (QuantizeLinear / DequantizeLinear), elementwise with
a scale and zero point per tensor, per axis or per block:

    quantize_linear(x, scale, zero_point)   = saturate(round_half_even(x / scale) + zero_point)
    dequantize_linear(x, scale, zero_point) = (x - zero_point) * scale

Integer results are computed in int32 before the saturation, so they are exact; float8 results
round through ops/lowbit.py's exact encoder (ONNX's saturate rule), float4 saturates always. A
low-precision output lives in its byte storage (int4 values in int8, float8 codes in uint8);
dequantize_linear reads such storage given the type it holds (`src`).
"""
from __future__ import annotations

from typing import Sequence

from tvm import tirx as tir

from ..errors import OpError
from .lowbit import FLOAT_FORMATS, INT_BITS, STORAGE, convert_decode, convert_encode, decode
from .registry import OpPattern, register_op
from .value import Value, lazy

INT_RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767), "uint16": (0, 65535),
              "int32": (-2 ** 31, 2 ** 31 - 1),
              **{k: ((-(1 << (b - 1)), (1 << (b - 1)) - 1) if s else (0, (1 << b) - 1)) for k, (b, s) in INT_BITS.items()}}
QUANT_FLOATS = tuple(f for f in FLOAT_FORMATS if f != "float8_e8m0fnu")
_ATTRS = {"axis": 1, "block_size": 0}


def _exact_in_float32(dtype: str) -> bool:
    """An integer type whose every value float32 holds exactly (int8 ... int16, the 4- and 2-bit ones)."""
    lo, hi = INT_RANGES.get(dtype, (-2 ** 63, 2 ** 63))
    return max(-lo, hi) < 2 ** 24


def _param_reader(p: Value, x_shape: tuple, axis: int, block_size: int, what: str):
    """index of x -> the scale / zero point that applies there (per tensor, axis or block)."""
    nd = len(x_shape)
    ax = axis + nd if axis < 0 else axis
    size = 1
    for d in p.shape:
        size *= d
    if size == 1:
        zeros = (0,) * p.ndim
        return lambda *i: p(*zeros)
    if not 0 <= ax < nd:
        raise OpError(f"{what}: axis {axis} out of range for rank {nd}")
    if block_size <= 0:
        if p.ndim != 1 or p.shape[0] != x_shape[ax]:
            raise OpError(f"{what}: a per-axis {what} must be 1-D of x's dim {ax} ({x_shape[ax]}), got {p.shape}")
        return lambda *i: p(i[ax])
    want = tuple(-(-d // block_size) if k == ax else d for k, d in enumerate(x_shape))
    if tuple(p.shape) != want:
        raise OpError(f"{what}: a blocked {what} (block_size {block_size} on axis {ax}) must be {want}, got {p.shape}")
    return lambda *i: p(*(tir.floordiv(v, block_size) if k == ax else v for k, v in enumerate(i)))


@register_op("quantize_linear", OpPattern.BROADCAST, num_inputs=3,
             attrs={**_ATTRS, "dtype": "uint8", "saturate": True, "reciprocal": False})
def quantize_linear(inputs: Sequence[Value], attrs: dict) -> Value:
    """x / scale rounded half to even, plus the zero point, saturated to `dtype` (int8, uint8,
    int16, uint16, int4, uint4, int2, uint2 or a float8/float4 format); the output is `dtype`'s
    one-byte storage for the low-precision ones.

    reciprocal=True: x times 1 / scale in float32 instead (TensorRT's quantization), which a
    constant scale folds to one multiply; ONNX's division costs about ten instructions an element
    (IEEE division) in every int8 conv epilogue that stores codes. A calibrated build's own
    quantizers take it (graph/calibration.insert_qdq); an imported QDQ model keeps ONNX's
    division, so its codes equal onnxruntime's."""
    x, scale, zp = inputs
    dtype, axis, block = str(attrs["dtype"]), int(attrs["axis"]), int(attrs["block_size"])
    if dtype not in INT_RANGES and dtype not in QUANT_FLOATS:
        raise OpError(f"quantize_linear: cannot quantize to {dtype}")
    if not x.dtype.startswith(("float", "bfloat")) or not scale.dtype.startswith(("float", "bfloat")):
        raise OpError(f"quantize_linear: x and scale must be floats, got {x.dtype} and {scale.dtype}")
    s_at = _param_reader(scale, x.shape, axis, block, "scale")
    z_at = _param_reader(zp, x.shape, axis, block, "zero point")
    out = STORAGE.get(dtype, dtype)
    cd = x.dtype if x.dtype == scale.dtype and x.dtype in ("float32", "float64", "float16") else "float32"

    by_reciprocal = bool(attrs["reciprocal"])

    def ratio(i):
        xv, sv = x(*i), s_at(*i)
        if by_reciprocal:  # in float32: 1 / scale folds where the scale is a constant
            return tir.Cast("float32", xv) * (tir.const(1.0, "float32") / tir.Cast("float32", sv))
        return tir.Cast(cd, xv) / tir.Cast(cd, sv) if cd != x.dtype or cd != scale.dtype else xv / sv

    if dtype in QUANT_FLOATS:
        is_f4 = dtype.startswith("float4")

        def fq(*i):
            r = tir.Cast("float32", ratio(i))
            if is_f4:  # ONNX adds a float4 zero point (float8 ones must be zero and are ignored)
                r = r + tir.Cast("float32", decode(dtype, z_at(*i)))
            return convert_encode(dtype, r, bool(attrs["saturate"]) or is_f4)

        return lazy(x.shape, out, fq)
    lo, hi = INT_RANGES[dtype]
    if _exact_in_float32(dtype) and _exact_in_float32(zp.dtype):
        def fq_small(*i):
            # a range float32 holds exactly: rounded, shifted by the zero point and saturated in
            # float32, one conversion at the end (no 64-bit arithmetic, which keeps the kernel
            # scalar); a sum past 2^24 is inexact only where it saturates anyway
            r = tir.nearbyint(tir.Cast("float32", ratio(i)))
            v = r + tir.Cast("float32", z_at(*i))
            v = tir.max(tir.min(v, tir.const(float(hi), "float32")), tir.const(float(lo), "float32"))
            return tir.Cast(out, v)

        return lazy(x.shape, out, fq_small)
    # keeps the int64 conversion defined and the zero point's add exact; past it every range saturates
    big = float(2 ** 62)

    def iq(*i):
        r = ratio(i)
        # rounded in float32 at least (exact for a half; CUDA has no nearbyint for halves)
        r = tir.nearbyint(r if cd != "float16" else tir.Cast("float32", r))
        r = tir.Cast("int64", tir.max(tir.min(tir.Cast("float64", r), tir.const(big, "float64")),
                                      tir.const(-big, "float64")))
        v = r + tir.Cast("int64", z_at(*i))
        v = tir.max(tir.min(v, tir.const(hi, "int64")), tir.const(lo, "int64"))
        return tir.Cast(out, v)

    return lazy(x.shape, out, iq)


@register_op("dequantize_linear", OpPattern.BROADCAST, num_inputs=3,
             attrs={**_ATTRS, "src": "", "dtype": "float32"})
def dequantize_linear(inputs: Sequence[Value], attrs: dict) -> Value:
    """(x - zero point) * scale in float32, cast to `dtype`; `src` names the low-precision type
    x's storage holds (int4, float8_e4m3fn...), empty for x's own dtype. float8/float4 zero
    points are not subtracted (ONNX requires them zero)."""
    x, scale, zp = inputs
    src = str(attrs["src"]) or x.dtype
    axis, block, dtype = int(attrs["axis"]), int(attrs["block_size"]), str(attrs["dtype"])
    if STORAGE.get(src, src) != x.dtype:
        raise OpError(f"dequantize_linear: src {src} is not held in {x.dtype}")
    s_at = _param_reader(scale, x.shape, axis, block, "scale")
    z_at = _param_reader(zp, x.shape, axis, block, "zero point")
    f32 = "float32"
    if src in QUANT_FLOATS:
        def fd(*i):
            return tir.Cast(dtype, convert_decode(src, x(*i)) * tir.Cast(f32, s_at(*i)))

        return lazy(x.shape, dtype, fd)
    if src not in INT_RANGES:
        raise OpError(f"dequantize_linear: cannot dequantize {src}")

    def idq(*i):
        d = tir.Cast(f32, x(*i)) - tir.Cast(f32, z_at(*i))  # in float32, as ONNX's reference
        return tir.Cast(dtype, d * tir.Cast(f32, s_at(*i)))

    return lazy(x.shape, dtype, idq)


@register_op("requantize", OpPattern.BROADCAST, num_inputs=3, attrs={"axis": 1, "dtype": "uint8"})
def requantize(inputs: Sequence[Value], attrs: dict) -> Value:
    """An int32 accumulator to `dtype`: round_half_even(acc * multiplier + zero point), saturated,
    in float64 as ONNX's QLinearConv / QLinearMatMul compute it (an int32 times a float scale is
    a double there). multiplier: per tensor, or per `axis` (a per-channel weight scale)."""
    acc, mult, zp = inputs
    dtype, axis = str(attrs["dtype"]), int(attrs["axis"])
    if dtype not in INT_RANGES:
        raise OpError(f"requantize: cannot requantize to {dtype}")
    m_at = _param_reader(mult, acc.shape, axis, 0, "multiplier")
    z_at = _param_reader(zp, acc.shape, axis, 0, "zero point")
    lo, hi = INT_RANGES[dtype]
    f64 = "float64"

    def rq(*i):
        v = tir.Cast(f64, acc(*i)) * tir.Cast(f64, m_at(*i)) + tir.Cast(f64, z_at(*i))
        v = tir.max(tir.min(tir.nearbyint(v), tir.const(hi, f64)), tir.const(lo, f64))
        return tir.Cast(STORAGE.get(dtype, dtype), v)

    return lazy(acc.shape, STORAGE.get(dtype, dtype), rq)
