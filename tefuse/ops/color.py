"""Colour conversions on the last (channel) axis, and YUV 4:2:0 frames to RGB.

color_convert is a table of conversions (CONVERSIONS) keyed by OpenCV-like names: channel
permutations and drops keep the type, gray is 0.299 R + 0.587 G + 0.114 B (BT.601 luma, as
OpenCV's), rounded and saturated for integer types.

nv12_to_rgb and i420_to_rgb read a 4:2:0 frame as planes (NV12: Y [H, W] and interleaved UV
[H/2, W]; I420: Y [H, W], U and V [H/2, W/2]), each output pixel reading its Y and the chroma of
its 2x2 block (no chroma interpolation, as OpenCV's cvtColor). The matrix is BT.601 or BT.709
from its luma weights Kr, Kb (MATRICES); full range takes Y and C - 128 as they are, limited
range stretches Y from [16, 235] and C from [16, 240]. Results are clamped to [0, 255], float32
unless `dtype` says otherwise. All of them are lazy index functions: after a crop or before a
resize, only the pixels read are converted.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from tvm import tirx as tir
from tvm.ir.expr import Expr as PrimExpr

from ..errors import OpError
from .registry import OpPattern, register_op
from .resize import saturate
from .value import Value, expr_dtype, lazy


def _select(c: PrimExpr, picks: Sequence[int]) -> PrimExpr:
    """picks[c] for a channel index c, as an index expression."""
    dt = expr_dtype(c) if not isinstance(c, int) else "int32"
    out = tir.const(picks[-1], dt)
    for k in range(len(picks) - 2, -1, -1):
        out = tir.Select(c == k, tir.const(picks[k], dt), out)
    return out


def _float(v: PrimExpr, compute: str) -> PrimExpr:
    return v if expr_dtype(v) == compute else tir.Cast(compute, v)


def _compute_dtype(dtype: str) -> str:
    return "float64" if dtype in ("float64",) or dtype.startswith(("int", "uint")) else "float32"


@dataclass(frozen=True)
class Conversion:
    """channels in, channels out, and the value of output channel c from a reader of input
    channels (read(k) -> the element of channel k at this pixel)."""

    cin: int
    cout: int
    value: Callable[[Callable[[PrimExpr], PrimExpr], PrimExpr, str], PrimExpr]


def _permute(picks: Sequence[int]) -> Callable:
    return lambda read, c, dtype: read(_select(c, picks))


def _gray(order: Sequence[int]) -> Callable:
    """0.299 R + 0.587 G + 0.114 B, `order` the channels of R, G, B."""
    def value(read, c, dtype):
        acc = _compute_dtype(dtype)
        r, g, b = (_float(read(k), acc) for k in order)
        return saturate(tir.const(0.299, acc) * r + tir.const(0.587, acc) * g + tir.const(0.114, acc) * b, dtype)
    return value


def _add_alpha(picks: Sequence[int]) -> Callable:
    def value(read, c, dtype):
        return tir.Select(c == 3, tir.const(_alpha(dtype), dtype), read(_select(c, picks)))
    return value


def _alpha(dtype: str) -> float | int:
    """An opaque alpha: the type's maximum for integers, 1 for floats."""
    return int(np.iinfo(dtype).max) if dtype.startswith(("int", "uint")) else 1.0


CONVERSIONS: dict[str, Conversion] = {
    "rgb2bgr": Conversion(3, 3, _permute((2, 1, 0))),
    "bgr2rgb": Conversion(3, 3, _permute((2, 1, 0))),
    "rgba2rgb": Conversion(4, 3, _permute((0, 1, 2))),
    "bgra2bgr": Conversion(4, 3, _permute((0, 1, 2))),
    "rgba2bgr": Conversion(4, 3, _permute((2, 1, 0))),
    "bgra2rgb": Conversion(4, 3, _permute((2, 1, 0))),
    "rgb2rgba": Conversion(3, 4, _add_alpha((0, 1, 2, 0))),
    "bgr2bgra": Conversion(3, 4, _add_alpha((0, 1, 2, 0))),
    "rgb2bgra": Conversion(3, 4, _add_alpha((2, 1, 0, 0))),
    "bgr2rgba": Conversion(3, 4, _add_alpha((2, 1, 0, 0))),
    "rgba2bgra": Conversion(4, 4, _permute((2, 1, 0, 3))),
    "bgra2rgba": Conversion(4, 4, _permute((2, 1, 0, 3))),
    "rgb2gray": Conversion(3, 1, _gray((0, 1, 2))),
    "bgr2gray": Conversion(3, 1, _gray((2, 1, 0))),
    "rgba2gray": Conversion(4, 1, _gray((0, 1, 2))),
    "bgra2gray": Conversion(4, 1, _gray((2, 1, 0))),
    "gray2rgb": Conversion(1, 3, _permute((0, 0, 0))),
    "gray2bgr": Conversion(1, 3, _permute((0, 0, 0))),
}


@register_op("color_convert", OpPattern.INJECTIVE, num_inputs=1, attrs={"code": "rgb2bgr"})
def color_convert(inputs: Sequence[Value], attrs: dict) -> Value:
    """A colour conversion of the last axis by name (code: rgb2bgr, rgba2rgb, rgb2gray,
    gray2rgb... see ops/color.py's CONVERSIONS); gray is kept as a channel axis of 1."""
    (x,) = inputs
    code = attrs["code"]
    conv = CONVERSIONS.get(code)
    if conv is None:
        raise OpError(f"color_convert: unknown code {code!r}; known: {', '.join(sorted(CONVERSIONS))}")
    if x.ndim < 1 or x.shape[-1] != conv.cin:
        raise OpError(f"color_convert: {code} takes {conv.cin} channel(s) on the last axis, got shape {x.shape}")

    def fn(*i):
        *lead, c = i
        return conv.value(lambda k: x(*lead, k), c, x.dtype)

    return lazy((*x.shape[:-1], conv.cout), x.dtype, fn)


# -- YUV 4:2:0 ----------------------------------------------------------------------------------
MATRICES = {"bt601": (0.299, 0.114), "bt709": (0.2126, 0.0722)}  # (Kr, Kb)
RANGES = ("full", "limited")
ORDERS = ("rgb", "bgr")


def yuv_coefficients(standard: str, value_range: str) -> tuple[float, float, float, float, float, float]:
    """(y_scale, y_offset, r_v, g_u, g_v, b_u): R = ys (Y - yo) + r_v V', G = ys (Y - yo) - g_u U'
    - g_v V', B = ys (Y - yo) + b_u U', with U' = U - 128 and V' = V - 128."""
    kr, kb = MATRICES[standard]
    kg = 1.0 - kr - kb
    ys, yo, cs = (1.0, 0.0, 1.0) if value_range == "full" else (255.0 / 219.0, 16.0, 255.0 / 224.0)
    return (ys, yo, cs * 2 * (1 - kr), cs * 2 * kb * (1 - kb) / kg, cs * 2 * kr * (1 - kr) / kg, cs * 2 * (1 - kb))


def _yuv_attrs(attrs: dict, op: str) -> tuple:
    if attrs["standard"] not in MATRICES:
        raise OpError(f"{op}: standard must be one of {', '.join(MATRICES)}, got {attrs['standard']!r}")
    if attrs["range"] not in RANGES:
        raise OpError(f"{op}: range must be one of {', '.join(RANGES)}, got {attrs['range']!r}")
    if attrs["order"] not in ORDERS:
        raise OpError(f"{op}: order must be one of {', '.join(ORDERS)}, got {attrs['order']!r}")
    if not attrs["dtype"].startswith(("float", "int", "uint")):
        raise OpError(f"{op}: dtype must be a numeric type, got {attrs['dtype']!r}")
    return yuv_coefficients(attrs["standard"], attrs["range"])


def _rgb(y: PrimExpr, u: PrimExpr, v: PrimExpr, c: PrimExpr, coef: tuple, order: str, dtype: str) -> PrimExpr:
    """Channel c of the pixel (Y, U, V), clamped to [0, 255], as `dtype`."""
    ys, yo, rv, gu, gv, bu = coef
    k = lambda a: tir.const(a, "float32")  # noqa: E731
    yy = (_float(y, "float32") - k(yo)) * k(ys)
    uu, vv = _float(u, "float32") - k(128.0), _float(v, "float32") - k(128.0)
    r, g, b = yy + k(rv) * vv, yy - k(gu) * uu - k(gv) * vv, yy + k(bu) * uu
    first, last = (r, b) if order == "rgb" else (b, r)
    out = tir.Select(c == 0, first, tir.Select(c == 1, g, last))
    out = tir.max(tir.min(out, k(255.0)), k(0.0))
    return saturate(tir.Cast("float64", out) if dtype.startswith(("int", "uint")) else out, dtype)


def _check_plane(v: Value, shape: tuple, what: str, op: str) -> None:
    if tuple(v.shape) != shape:
        raise OpError(f"{op}: {what} plane must have shape {shape}, got {v.shape}")
    if not v.dtype.startswith(("uint", "int", "float")):
        raise OpError(f"{op}: {what} plane must be numeric, got {v.dtype}")


YUV_ATTRS = {"standard": "bt601", "range": "limited", "order": "rgb", "dtype": "float32"}


@register_op("nv12_to_rgb", OpPattern.INJECTIVE, num_inputs=2, attrs=dict(YUV_ATTRS))
def nv12_to_rgb(inputs: Sequence[Value], attrs: dict) -> Value:
    """An NV12 frame (Y [H, W], interleaved UV [H/2, W]) as [H, W, 3] RGB (order=bgr: BGR);
    standard bt601 or bt709, range full or limited."""
    y, uv = inputs
    op = "nv12_to_rgb"
    coef = _yuv_attrs(attrs, op)
    if y.ndim != 2 or y.shape[0] % 2 or y.shape[1] % 2:
        raise OpError(f"{op}: the Y plane must be [H, W] with even H and W, got shape {y.shape}")
    H, W = y.shape
    _check_plane(uv, (H // 2, W), "the UV", op)

    def fn(r, c, ch):
        row, col = tir.floordiv(r, 2), tir.floordiv(c, 2) * 2
        return _rgb(y(r, c), uv(row, col), uv(row, col + 1), ch, coef, attrs["order"], attrs["dtype"])

    return lazy((H, W, 3), attrs["dtype"], fn)


@register_op("i420_to_rgb", OpPattern.INJECTIVE, num_inputs=3, attrs=dict(YUV_ATTRS))
def i420_to_rgb(inputs: Sequence[Value], attrs: dict) -> Value:
    """An I420 frame (planes Y [H, W], U and V [H/2, W/2]) as [H, W, 3] RGB (order=bgr: BGR);
    standard bt601 or bt709, range full or limited."""
    y, u, v = inputs
    op = "i420_to_rgb"
    coef = _yuv_attrs(attrs, op)
    if y.ndim != 2 or y.shape[0] % 2 or y.shape[1] % 2:
        raise OpError(f"{op}: the Y plane must be [H, W] with even H and W, got shape {y.shape}")
    H, W = y.shape
    _check_plane(u, (H // 2, W // 2), "the U", op)
    _check_plane(v, (H // 2, W // 2), "the V", op)

    def fn(r, c, ch):
        row, col = tir.floordiv(r, 2), tir.floordiv(c, 2)
        return _rgb(y(r, c), u(row, col), v(row, col), ch, coef, attrs["order"], attrs["dtype"])

    return lazy((H, W, 3), attrs["dtype"], fn)
