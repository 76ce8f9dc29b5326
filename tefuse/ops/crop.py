"""crop and crop_resize: planes of a fixed size cut from an image by rectangles given at run time.

The rectangles are a tensor argument ([n, 4] rows of x, y, w, h, or [n, 5] rows of image, x, y,
w, h for a batch of images), so new rectangles run the same compiled kernel. One launch covers
every plane: the planes are one output axis, each thread computes one output element and reads its
own plane's rectangle (the horizontal fusion of planes whose source extents differ).

crop_resize is the crop and the resize as one index computation on the source image: an output
pixel maps to a coordinate inside its rectangle with ONNX Resize's half_pixel transform (OpenCV's
INTER_LINEAR / INTER_NEAREST centres), and reads only the few source pixels its filter window
covers, clamped to the rectangle and to the image (a rectangle reaching outside the image reads
the edge, never out of bounds). The filters and nearest rounding are resize.py's. With
keep_aspect_ratio the rectangle is scaled by one factor to th x tw, centred in the plane (FKL's
PRESERVE_AR: to the plane's height, its width rounded half up, unless that is too wide, then to
its width); the bands around it hold `background`.

The source is [H, W] or [H, W, C] (one image) or [N, H, W, C] (a batch, each rectangle naming
its image); any integer or float type is read and converted in the kernel.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from tvm import tirx as tir
from tvm.ir.expr import Expr as PrimExpr

from ..errors import OpError
from .fastmath import sample_ratio
from .registry import OpPattern, register_op
from .resize import F64, FILTERS, NEAREST, Axis, bounded, f64, nearest_start, saturate, tie_ratio
from .value import Value, bind, bind_all, expr_dtype, lazy

CROP_MODES = ("nearest", "linear", "cubic")
RECT_DTYPES = ("int32", "int64", "int16", "uint16")
_ANY_AXIS = Axis(1, 1, 1.0)  # NEAREST's rules read an axis only for Resize-10's "simple" mode


def _i(v: int, dtype: str = "int32") -> PrimExpr:
    """An index constant of the loops' index type (int64 in kernels past 2^31 - 1 elements)."""
    return tir.const(int(v), dtype)


def _layout(x: Value, rects: Value, op: str, plane_sizes: bool = False) -> bool:
    """Whether the source is a batch ([N, H, W, C]); checks the rectangles' shape against it
    (with `plane_sizes`, each row ends with its plane's output height and width)."""
    if x.ndim not in (2, 3, 4):
        raise OpError(f"{op}: the image must be [H, W], [H, W, C] or [N, H, W, C], got shape {x.shape}")
    batched = x.ndim == 4
    want = (5 if batched else 4) + (2 if plane_sizes else 0)
    if rects.ndim != 2 or rects.shape[1] != want:
        rows = ("image, x, y, w, h" if batched else "x, y, w, h") + (", out_h, out_w" if plane_sizes else "")
        raise OpError(f"{op}: rects must be [n, {want}] rows of {rows} for an image of shape {x.shape}, "
                      f"got shape {rects.shape}")
    if rects.dtype not in RECT_DTYPES:
        raise OpError(f"{op}: rects must be an integer tensor ({', '.join(RECT_DTYPES)}), got {rects.dtype}")
    return batched


def _size(attrs: dict, op: str) -> tuple[int, int]:
    size = attrs["size"]
    if size is None or len(size) != 2 or not all(
            isinstance(s, (int, np.integer)) and not isinstance(s, bool) and s >= 1 for s in size):
        raise OpError(f"{op}: size must be (height, width) of positive integers, got {size!r}")
    return int(size[0]), int(size[1])


def _background(attrs: dict, channels: int, op: str) -> tuple[float, ...]:
    bg = attrs["background"]
    try:
        vals = tuple(float(v) for v in bg) if isinstance(bg, (tuple, list)) else (float(bg),)
    except (TypeError, ValueError):
        raise OpError(f"{op}: background must be a number or one per channel, got {bg!r}") from None
    if len(vals) not in (1, channels):
        raise OpError(f"{op}: background must be one value or one per channel ({channels}), got {bg!r}")
    return vals if len(vals) == channels else vals * channels


def per_channel(values: Sequence[float], c: PrimExpr, dtype: str) -> PrimExpr:
    """values[c] as a `dtype` constant (an integer type's rounded and saturated): one constant,
    or a select over the channel index."""
    def const(v):
        if dtype.startswith(("int", "uint")):
            info = np.iinfo(dtype)
            return tir.const(int(np.clip(np.round(v), info.min, info.max)), dtype)
        return tir.const(float(v), dtype)

    out = const(values[-1])
    if len(set(values)) == 1:
        return out
    for k in range(len(values) - 2, -1, -1):
        out = tir.Select(c == k, const(values[k]), out)
    return out


@dataclass(frozen=True)
class _Rect:
    """One output pixel's rectangle: its image (None for a single image), origin and extent."""

    dtype: str  # the index type
    image: Optional[PrimExpr]
    x: PrimExpr
    y: PrimExpr
    w: PrimExpr
    h: PrimExpr

    @staticmethod
    def fields(rects: Value, i: PrimExpr, batched: bool) -> list[PrimExpr]:
        """The rectangle of plane i as expressions of the index type ([image,] x, y, w, h); an
        extent below 1 counts as 1."""
        dt = expr_dtype(i)

        def field(k):
            v = rects(i, k)
            return v if expr_dtype(v) == dt else tir.Cast(dt, v)

        off = 1 if batched else 0
        xywh = [field(off), field(off + 1), tir.max(field(off + 2), _i(1, dt)), tir.max(field(off + 3), _i(1, dt))]
        return ([field(0)] if batched else []) + xywh

    @staticmethod
    def of(batched: bool, *f: PrimExpr) -> "_Rect":
        dt = expr_dtype(f[0])
        return _Rect(dt, *f) if batched else _Rect(dt, None, *f)


def _clamped(i: PrimExpr, origin: PrimExpr, extent: PrimExpr, size: int) -> PrimExpr:
    """Index i of a rectangle's axis as an index of the image's: clamped to the rectangle, then
    to the image."""
    dt = expr_dtype(origin)
    j = origin + tir.max(tir.min(i, extent - 1), _i(0, dt))
    return tir.max(tir.min(j, _i(size - 1, dt)), _i(0, dt))


def _reader(x: Value, batched: bool, rect: _Rect, trailing: tuple):
    """A function (row, col) -> the source element of this pixel's channel (as float32)."""
    def read(r, c):
        image = tir.max(tir.min(rect.image, _i(x.shape[0] - 1, rect.dtype)), _i(0, rect.dtype)) if batched else None
        idx = ([image] if batched else []) + [r, c, *trailing]
        v = x(*idx)
        return v if expr_dtype(v) == "float32" else tir.Cast("float32", v)
    return read


def _fit(rect: _Rect, oh: PrimExpr, ow: PrimExpr) -> tuple[PrimExpr, PrimExpr]:
    """The rectangle scaled to the plane's height, its width rounded half up, unless that width
    exceeds the plane's: then scaled to its width, the height rounded (FKL's PRESERVE_AR rule),
    in integers, so that no float rounding decides a band's width. (th, tw), each at least 1."""
    dt = rect.dtype
    two = _i(2, dt)
    # truncated division: every operand is at least 1, and a floor division by a run-time
    # divisor costs CUDA a remainder and two sign corrections
    by_height = tir.truncdiv(two * oh * rect.w + rect.h, two * rect.h)
    # the choice as arithmetic, not a select: the arms read the rectangle, and TVM makes a select
    # whose arms load a branch, which keeps nvcc from sharing the fit between a pixel's channels
    too_wide = tir.Cast(dt, by_height > ow)
    th = oh + too_wide * (tir.truncdiv(two * ow * rect.h + rect.w, two * rect.w) - oh)
    tw = by_height + too_wide * (ow - by_height)
    return tir.max(th, _i(1, dt)), tir.max(tw, _i(1, dt))


COORDINATES = ("half_pixel", "asymmetric")


F32 = "float32"


def _f32(v: float) -> PrimExpr:
    return tir.FloatImm(F32, v)


def _coordinate(y: PrimExpr, start: PrimExpr, src: PrimExpr, dst: PrimExpr, how: str, mode: str) -> PrimExpr:
    """Output position y (offset by `start`) of a `dst`-long axis resized from a `src`-long one,
    as a source coordinate: half_pixel (OpenCV's INTER_LINEAR centres, ONNX's half_pixel), or
    asymmetric (y * src / dst: ONNX's asymmetric, what FKL's Resize computes).

    Linear and cubic windows take it in float32, as OpenCV and FKL do: a float64 division a
    pixel sat on the kernel's critical path, and float32 places a 4K image's coordinates within
    1/4000 of a pixel, which moves a bilinear value by at most that share of its neighbours'
    difference; the scale is fastmath's sample ratio for the same reason. Nearest keeps float64,
    whose rounding ties its rules name."""
    if mode == "nearest":
        yy = tir.Cast(F64, y - start)
        if how == "asymmetric":
            return yy * tir.Cast(F64, src) / tir.Cast(F64, dst)
        return (yy + f64(0.5)) * tir.Cast(F64, src) / tir.Cast(F64, dst) - f64(0.5)
    yy, scale = tir.Cast(F32, y - start), sample_ratio(src, dst)
    if how == "asymmetric":
        return yy * scale
    return (yy + _f32(0.5)) * scale - _f32(0.5)


def _taps(mode: str, x: PrimExpr, bound: int, dt: str) -> list[tuple[PrimExpr, PrimExpr]]:
    """(index before clamping, weight as float32) of the filter's window around coordinate x;
    `bound` holds x within the image before it becomes an integer."""
    if mode == "nearest":
        i = nearest_start(x, bound, dt) + tir.Cast(dt, NEAREST["round_prefer_floor"](tie_ratio(x), _ANY_AXIS))
        return [(i, None)]
    flt = FILTERS[(mode, False)](1.0, -0.75)
    fl = tir.floor(bounded(x, bound, flt.taps))
    start = tir.Cast(dt, fl) - (flt.taps // 2 - 1)
    r = x - fl
    if mode == "linear":
        weights = [_f32(1.0) - r, r]
    else:  # cubic's coefficients as resize computes them, from the float32 ratio
        weights = [tir.Cast(F32, c) for c in flt.coefficients(tir.Cast(F64, r))]
    return [(start + k, w) for k, w in enumerate(weights)]


def _check_dtype(dtype: str, op: str) -> None:
    if not dtype.startswith(("float", "int", "uint")):
        raise OpError(f"{op}: dtype must be a numeric type, got {dtype!r}")


@register_op("crop_resize", OpPattern.INJECTIVE, num_inputs=2, samples=True,
             attrs={"size": None, "mode": "linear", "keep_aspect_ratio": False, "background": 0.0,
                    "dtype": "float32", "coordinate": "half_pixel", "plane_sizes": False})
def crop_resize(inputs: Sequence[Value], attrs: dict) -> Value:
    """Each rectangle of `rects` (a run-time tensor) resized to size=(height, width): mode
    nearest, linear or cubic with half_pixel centres; keep_aspect_ratio fits it centred, the bands
    `background` (one value or one per channel); `coordinate` half_pixel (default) or asymmetric.
    Output [n, height, width, C] in `dtype`. With `plane_sizes` each rectangle's row ends with its
    own output height and width (run-time, clamped to `size`): planes of different sizes in one
    launch, each at the top left of its [height, width] plane, the rest `background`."""
    x, rects = inputs
    op = "crop_resize"
    planes = bool(attrs["plane_sizes"])
    batched = _layout(x, rects, op, planes)
    oh, ow = _size(attrs, op)
    mode = attrs["mode"]
    if mode not in CROP_MODES:
        raise OpError(f"{op}: mode must be one of {', '.join(CROP_MODES)}, got {mode!r}")
    dtype = attrs["dtype"]
    _check_dtype(dtype, op)
    how = attrs["coordinate"]
    if how not in COORDINATES:
        raise OpError(f"{op}: coordinate must be one of {', '.join(COORDINATES)}, got {how!r}")
    sp = 1 if batched else 0
    H, W = x.shape[sp], x.shape[sp + 1]
    channels = x.shape[sp + 2:]
    bg = _background(attrs, channels[0] if channels else 1, op)
    keep = bool(attrs["keep_aspect_ratio"])

    def pixel(rect: _Rect, th, tw, y0, x0, oy, ox, ch) -> PrimExpr:
        read = _reader(x, batched, rect, ch)

        def interpolate(sy, sx):
            value = None
            cols = [(_clamped(c, rect.x, rect.w, W), wc) for c, wc in _taps(mode, sx, W, rect.dtype)]
            for r, wr in _taps(mode, sy, H, rect.dtype):
                rr = _clamped(r, rect.y, rect.h, H)
                for cc, wc in cols:
                    v = read(rr, cc)
                    term = v if wr is None else wr * wc * v
                    value = term if value is None else value + term
            return saturate(tir.Cast(F64, value) if dtype.startswith(("int", "uint")) else value, dtype)

        def sample(sy, sx):
            if not keep:
                return interpolate(sy, sx)
            inside = (oy >= y0) & (oy < y0 + th) & (ox >= x0) & (ox < x0 + tw)
            return banded(inside, interpolate(sy, sx), ch)

        return bind_all([_coordinate(oy, y0, rect.h, th, how, mode), _coordinate(ox, x0, rect.w, tw, how, mode)],
                        sample)

    def banded(inside: PrimExpr, value: PrimExpr, ch) -> PrimExpr:
        """value inside the fitted rectangle, else the background. The value is bound first and
        so computed for band pixels too (its reads are clamped into the image): a select whose
        arm loads becomes a branch, and a branch a channel keeps nvcc from sharing one pixel's
        coordinates, window and rectangle loads between its channels."""
        return bind(value, lambda v: tir.Select(inside, v, per_channel(bg, ch[0] if ch else 0, dtype)), always=True)

    def plane(rect: _Rect, ph, pw, oy, ox, ch) -> PrimExpr:
        """The pixel (oy, ox) of a ph x pw plane."""
        dt = rect.dtype
        if not keep:
            return pixel(rect, ph, pw, _i(0, dt), _i(0, dt), oy, ox, ch)
        centred = lambda th, tw: pixel(rect, th, tw, tir.floordiv(ph - th, _i(2, dt)),  # noqa: E731
                                       tir.floordiv(pw - tw, _i(2, dt)), oy, ox, ch)
        return bind_all(list(_fit(rect, ph, pw)), centred)

    def sized(i, rect: _Rect, oy, ox, ch) -> PrimExpr:
        """A plane whose size its rectangle's row gives: the pixels past it are background."""
        dt = rect.dtype
        k = 5 if batched else 4
        size_of = lambda j, most: tir.max(tir.min(tir.Cast(dt, rects(i, j)), _i(most, dt)), _i(1, dt))  # noqa: E731

        def inside(ph, pw):
            return banded((oy < ph) & (ox < pw), plane(rect, ph, pw, oy, ox, ch), ch)

        return bind_all([size_of(k, oh), size_of(k + 1, ow)], inside)

    def fn(i, oy, ox, *ch):
        # the rectangle, its fit and the coordinates are computed once, not in every tap
        def at(*f):
            rect = _Rect.of(batched, *f)
            if planes:
                return sized(i, rect, oy, ox, ch)
            return plane(rect, _i(oh, rect.dtype), _i(ow, rect.dtype), oy, ox, ch)

        return bind_all(_Rect.fields(rects, i, batched), at)

    return lazy((rects.shape[0], oh, ow, *channels), dtype, fn)


@register_op("crop", OpPattern.INJECTIVE, num_inputs=2, attrs={"size": None, "background": 0.0})
def crop(inputs: Sequence[Value], attrs: dict) -> Value:
    """Each rectangle of `rects` (a run-time tensor) as a plane of size=(height, width), its
    top-left corner at the plane's: pixels past the rectangle, or past the image, hold
    `background`. Output [n, height, width, C] in the image's type."""
    x, rects = inputs
    op = "crop"
    batched = _layout(x, rects, op)
    oh, ow = _size(attrs, op)
    sp = 1 if batched else 0
    H, W = x.shape[sp], x.shape[sp + 1]
    channels = x.shape[sp + 2:]
    bg = _background(attrs, channels[0] if channels else 1, op)

    def fn(i, oy, ox, *ch):
        rect = _Rect.of(batched, *_Rect.fields(rects, i, batched))
        r, c = rect.y + oy, rect.x + ox
        inside = (oy < rect.h) & (ox < rect.w) & (r >= 0) & (r < H) & (c >= 0) & (c < W)
        dt = rect.dtype
        idx = [tir.max(tir.min(r, _i(H - 1, dt)), _i(0, dt)), tir.max(tir.min(c, _i(W - 1, dt)), _i(0, dt)), *ch]
        if batched:
            idx.insert(0, tir.max(tir.min(rect.image, _i(x.shape[0] - 1, dt)), _i(0, dt)))
        return tir.Select(inside, x(*idx), per_channel(bg, ch[0] if ch else 0, x.dtype))

    return lazy((rects.shape[0], oh, ow, *channels), x.dtype, fn)
