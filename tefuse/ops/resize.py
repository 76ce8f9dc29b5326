"""resize: ONNX Resize (and Upsample) as a lazy value, so that it fuses into its consumers' loads.

Each output element reads a few input elements at indices computed from its own position: the op
is injective, an index function plus a weighted sum of a fixed number of reads, never a stage of
its own (a resize before a conv becomes part of the conv's input load; resize -> add -> relu is one
kernel). The semantics are onnx.reference's (onnx/reference/ops/op_resize.py), axis by axis:

- an output position y maps to a source coordinate x (COORDINATES, by
  coordinate_transformation_mode), computed in float64 in the reference's order of operations, so
  that ties (nearest's x.5, whole-number coordinates) fall as they do there;
- a window of `taps` neighbours around x, each index clamped to the axis (the reference's edge
  padding: no read is ever out of bounds), is weighted by the mode's filter (FILTERS: linear,
  cubic, and their antialias forms, which stretch the filter by 1/scale when downscaling), or,
  for nearest, one neighbour is picked (NEAREST);
- an N-D resize is the separable product of its axes' windows.

Where the reference departs from the ONNX text, the reference wins: pytorch_half_pixel maps an
output of length 1 to x = -0.5 (the text says 0, onnxruntime follows the text; only cubic results
differ). nearest_mode "simple" is Resize-10's and Upsample's (which the ONNX text leaves open):
onnxruntime's floor when an axis grows, ceil when it shrinks.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np
from tvm import tirx as tir
from tvm.ir.expr import Expr as PrimExpr

from ..errors import OpError
from .registry import OpPattern, register_op
from .value import Value, expr_dtype, lazy

F64 = "float64"
# input elements one output element may read: antialias widens windows by 1/scale when downscaling
# (cubic at 1/4: 16 x 16 taps); the weights are inline in the expression, which takes seconds to
# compile at that size
MAX_READS = 256
POLICIES = ("stretch", "not_larger", "not_smaller")
ROI_DTYPES = ("float16", "float32", "float64")  # ONNX roi tensors' types


def f64(v: float) -> PrimExpr:
    """A float64 constant: resize's coordinates and weights are computed in float64, as the
    reference computes them."""
    return tir.const(float(v), F64)


@dataclass(frozen=True)
class Axis:
    """One axis of a resize: input length, output length, the scale its coordinates divide by,
    and its region of interest (tf_crop_and_resize's start and end, as fractions of the axis, and
    the type the roi's arithmetic is done in: ONNX's roi tensor's)."""

    size: int
    out: int
    scale: float
    roi: tuple[float, float] = (0.0, 1.0)
    roi_dtype: str = "float32"

    @property
    def width(self) -> float:
        """The output length as the reference's coordinates see it: scale * input length, a real
        number (output_width), not the integer length (output_width_int)."""
        return self.scale * self.size

    def is_identity(self, crop: bool) -> bool:
        """Whether the reference leaves this axis alone (scale 1, same length, whole roi)."""
        whole = not crop or (math.isclose(self.roi[0], 0.0) and math.isclose(self.roi[1], 1.0))
        return math.isclose(self.scale, 1.0) and self.out == self.size and whole


# -- coordinate transformations: output position (float64) -> source coordinate ----------------
Coordinate = Callable[[PrimExpr, Axis], PrimExpr]


def _half_pixel(y: PrimExpr, a: Axis) -> PrimExpr:
    return (y + f64(0.5)) / f64(a.scale) - f64(0.5)


def _half_pixel_symmetric(y: PrimExpr, a: Axis) -> PrimExpr:
    offset = a.size / 2 * (1 - a.out / a.width)  # the roi's centre stays the output's centre
    return f64(offset) + (y + f64(0.5)) / f64(a.scale) - f64(0.5)


def _pytorch_half_pixel(y: PrimExpr, a: Axis) -> PrimExpr:
    return f64(-0.5) if a.width == 1 else _half_pixel(y, a)


def _align_corners(y: PrimExpr, a: Axis) -> PrimExpr:
    return f64(0.0) if a.width == 1 else y * f64(a.size - 1) / f64(a.width - 1)


def _asymmetric(y: PrimExpr, a: Axis) -> PrimExpr:
    return y / f64(a.scale)


def _tf_half_pixel_for_nn(y: PrimExpr, a: Axis) -> PrimExpr:
    return (y + f64(0.5)) / f64(a.scale)


def _tf_crop_and_resize(y: PrimExpr, a: Axis) -> PrimExpr:
    # the roi's own arithmetic in its own type (float32 mostly), as numpy does it in the reference
    t = np.dtype(a.roi_dtype).type
    start, end = t(a.roi[0]), t(a.roi[1])
    offset = start * (a.size - 1)
    if a.width == 1:
        return f64((end - start) * (a.size - 1) / 2) + f64(offset)
    return y * f64(end - start) * f64(a.size - 1) / f64(a.width - 1) + f64(offset)


COORDINATES: dict[str, Coordinate] = {
    "half_pixel": _half_pixel,
    "half_pixel_symmetric": _half_pixel_symmetric,
    "pytorch_half_pixel": _pytorch_half_pixel,
    "align_corners": _align_corners,
    "asymmetric": _asymmetric,
    "tf_half_pixel_for_nn": _tf_half_pixel_for_nn,  # Resize-11 only
    "tf_crop_and_resize": _tf_crop_and_resize,
}

# -- nearest: whether the second of the two neighbours is taken, from the ratio in (0, 1] -------
Pick = Callable[[PrimExpr, Axis], PrimExpr]
NEAREST: dict[str, Pick] = {
    "round_prefer_floor": lambda r, a: r > f64(0.5),  # a whole-number coordinate has ratio 1
    "round_prefer_ceil": lambda r, a: r >= f64(0.5),
    "floor": lambda r, a: r == f64(1.0),
    "ceil": lambda r, a: tir.const(True, "bool"),
    "simple": lambda r, a: NEAREST["floor" if a.scale >= 1 else "ceil"](r, a),
}


# -- filters: the weights of a window's taps, from the ratio (float64 expressions) -------------
@dataclass(frozen=True)
class Filter:
    """A mode's weights along one axis: `taps` coefficients as functions of the ratio r = x -
    floor(x), tap k sitting at floor(x) - taps/2 + 1 + k."""

    taps: int  # the window's length along one axis (always even)
    coefficients: Callable[[PrimExpr], list[PrimExpr]]
    normalised: bool = False  # weights are the coefficients divided by their sum (antialias)


def _linear(scale: float, a: float) -> Filter:
    return Filter(2, lambda r: [f64(1.0) - r, r])


def _cubic(scale: float, a: float) -> Filter:
    A = f64(a)

    def coefficients(r):
        s, t = r + f64(1.0), f64(1.0) - r  # distances to the outer taps are s and t + 1
        u = t + f64(1.0)
        return [((A * s - f64(5 * a)) * s + f64(8 * a)) * s - f64(4 * a),
                ((A + f64(2.0)) * r - (A + f64(3.0))) * r * r + f64(1.0),
                ((A + f64(2.0)) * t - (A + f64(3.0))) * t * t + f64(1.0),
                ((A * u - f64(5 * a)) * u + f64(8 * a)) * u - f64(4 * a)]

    return Filter(4, coefficients)


def _linear_antialias(scale: float, a: float) -> Filter:
    s = min(scale, 1.0)
    start = int(np.floor(-1 / s) + 1)
    n = 2 - 2 * start

    def coefficients(r):
        return [tir.max(tir.min(f64(1.0) - tir.abs((f64(start + k) - r) * f64(s)), f64(1.0)), f64(0.0))
                for k in range(n)]

    return Filter(n, coefficients, normalised=True)


def _cubic_antialias(scale: float, a: float) -> Filter:
    s = min(scale, 1.0)
    start = int(np.floor(-2 / s) + 1)
    n = 2 - 2 * start

    def kernel(x):  # Keys' cubic in Horner form (the weights are normalised; rounding differs by ulps)
        x = tir.abs(x)
        near = (f64(a + 2) * x - f64(a + 3)) * x * x + f64(1.0)
        far = ((f64(a) * x - f64(5 * a)) * x + f64(8 * a)) * x - f64(4 * a)
        return tir.Select(x <= f64(1.0), near, tir.Select(x < f64(2.0), far, f64(0.0)))

    return Filter(n, lambda r: [kernel(f64(s) * (f64(start + k) - r)) for k in range(n)], normalised=True)


FILTERS: dict[tuple[str, bool], Callable[[float, float], Filter]] = {
    ("linear", False): _linear,
    ("cubic", False): _cubic,
    ("linear", True): _linear_antialias,
    ("cubic", True): _cubic_antialias,
}
MODES = ("nearest", "linear", "cubic")


# -- shapes ---------------------------------------------------------------------------------------
def _full_axes(rank: int, axes) -> list[int]:
    if axes is None:
        return list(range(rank))
    out = []
    for ax in axes:
        a = int(ax) + rank if int(ax) < 0 else int(ax)
        if not 0 <= a < rank:
            raise OpError(f"resize: axis {ax} out of range for rank {rank}")
        out.append(a)
    if len(set(out)) != len(out):
        raise OpError(f"resize: axes {list(axes)} repeat an axis")
    return out


def resize_axes(shape: Sequence[int], attrs: dict) -> list[Axis]:
    """Every axis' lengths, scale and roi, from scales or sizes (over `axes`, the rest kept), as
    the reference derives them: from scales, out = floor(scale * in); from sizes, scale = out / in,
    or with keep_aspect_ratio_policy one scale (the min or max over `axes`) and
    out = round_half_up(scale * in)."""
    rank = len(shape)
    axes = _full_axes(rank, attrs["axes"])
    scales, sizes, policy = attrs["scales"], attrs["sizes"], attrs["keep_aspect_ratio_policy"]
    if (scales is None) == (sizes is None):
        raise OpError("resize: give exactly one of scales and sizes")
    if policy not in POLICIES:
        raise OpError(f"resize: keep_aspect_ratio_policy must be one of {', '.join(POLICIES)}, got {policy!r}")
    given = scales if sizes is None else sizes
    if len(given) != len(axes):
        raise OpError(f"resize: {'scales' if sizes is None else 'sizes'} {list(given)} must have one value per "
                      f"resized axis ({len(axes)})")
    roi = attrs["roi"]
    if roi is not None and len(roi) != 2 * len(axes):
        raise OpError(f"resize: roi {list(roi)} must hold a start and an end per resized axis ({2 * len(axes)} values)")
    full_roi = [(0.0, 1.0)] * rank
    rdt = attrs["roi_dtype"]
    if rdt not in ROI_DTYPES:
        raise OpError(f"resize: roi_dtype must be one of {', '.join(ROI_DTYPES)}, got {rdt!r}")
    for k, a in enumerate(axes):
        if roi is not None:
            full_roi[a] = (float(roi[k]), float(roi[len(axes) + k]))
    if sizes is None:
        sc = [1.0] * rank
        for k, a in enumerate(axes):
            sc[a] = float(scales[k])
        if not all(math.isfinite(s) and s > 0 for s in sc):
            raise OpError(f"resize: scales must be positive and finite, got {list(scales)}")
        out = [int(s * d) for s, d in zip(sc, shape)]
        return [Axis(int(d), o, s, r, rdt) for d, o, s, r in zip(shape, out, sc, full_roi)]
    out = [int(d) for d in shape]
    for k, a in enumerate(axes):
        if int(sizes[k]) != sizes[k] or int(sizes[k]) < 0:
            raise OpError(f"resize: sizes must be non-negative integers, got {list(sizes)}")
        out[a] = int(sizes[k])
    sc = [o / d for o, d in zip(out, shape)]
    if policy != "stretch":
        pick = min if policy == "not_larger" else max
        s = pick(sc[a] for a in axes)
        sc = [s if a in axes else 1.0 for a in range(rank)]
        out = [int(s * shape[a] + 0.5) if a in axes else int(shape[a]) for a in range(rank)]
    return [Axis(int(d), o, s, r, rdt) for d, o, s, r in zip(shape, out, sc, full_roi)]


# -- the compute ----------------------------------------------------------------------------------
def bounded(x: PrimExpr, size: int, margin: int) -> PrimExpr:
    """x held within `margin` of the axis before it becomes an integer: a coordinate far outside
    (a roi of 1e12) would overflow the cast, and every window that far out clamps to the same
    edge element anyway. In x's own float type (float64 here; crop_resize's float32 windows)."""
    dt = expr_dtype(x)
    return tir.max(tir.min(x, tir.FloatImm(dt, size + margin)), tir.FloatImm(dt, -margin))


def nearest_start(x: PrimExpr, size: int, idx: str) -> PrimExpr:
    """The lower of nearest's two candidates for x (before clamping), as the reference picks them
    from its edge-padded coordinate x + 1 (rounded as there): ceil(x + 1) - 2, which is floor(x), or
    one lower at a whole number (whose ratio is 1, so that the upper candidate, x itself, is taken)."""
    return tir.Cast(idx, tir.ceil(bounded(x, size, 2) + f64(1.0))) - 2


def tie_ratio(x: PrimExpr) -> PrimExpr:
    """x's position between its neighbours, in (0, 1]: 1 at a whole number."""
    fl = tir.floor(x)
    return tir.Select(x == fl, f64(1.0), x - fl)


def _clamp(i: PrimExpr, n: int) -> PrimExpr:
    return tir.max(tir.min(i, n - 1), 0)


@dataclass(frozen=True)
class _Plan:
    axes: list[Axis]
    moved: list[int]  # the axes that are not identities
    coordinate: Coordinate
    crop: bool
    attrs: dict


def _sum(terms: list[PrimExpr]) -> PrimExpr:
    total = terms[0]
    for t in terms[1:]:
        total = total + t
    return total


def _coordinate(plan: _Plan, k: int, y: PrimExpr) -> tuple[PrimExpr, Optional[PrimExpr]]:
    """Axis k's source coordinate of output position y (float64), and its out-of-roi condition
    (tf_crop_and_resize only, else None)."""
    a = plan.axes[k]
    x = plan.coordinate(tir.Cast(F64, y), a)
    return x, (((x < f64(0.0)) | (x > f64(a.size - 1))) if plan.crop else None)


def _pick(plan: _Plan, k: int, y: PrimExpr) -> tuple[PrimExpr, Optional[PrimExpr], Optional[PrimExpr]]:
    """nearest: axis k's (clamped) index at output position y, whether the pick lies on the axis
    (exclude_outside only, else None: a pick off the axis then reads as 0), and the out-of-roi
    condition."""
    a = plan.axes[k]
    x, outside = _coordinate(plan, k, y)
    pick = NEAREST[plan.attrs["nearest_mode"]](tie_ratio(x), a)
    idx = expr_dtype(y)
    i = nearest_start(x, a.size, idx) + tir.Cast(idx, pick)
    inside = ((i >= 0) & (i < a.size)) if plan.attrs["exclude_outside"] else None
    return _clamp(i, a.size), inside, outside


def _window(plan: _Plan, k: int, y: PrimExpr):
    """linear and cubic: axis k's taps at output position y as (clamped index, coefficient), the
    divisor that normalises the coefficients (None: they are the weights), and the out-of-roi
    condition.

    The window is floor(x) - taps/2 + 1 .. floor(x) + taps/2 and the ratio x - floor(x), in
    [0, 1). At a whole-number x the reference takes ratio 1 and the window one lower instead: the
    tap that drops out and the one that comes in both weigh 0 in every filter and the others keep
    their distances, so the sum is the same, for one floor less per coefficient. Normalising once,
    after the sum, gives the reference's weights up to rounding: antialias divides by the
    coefficients' sum, exclude_outside by the sum of those on the axis."""
    a, attrs = plan.axes[k], plan.attrs
    x, outside = _coordinate(plan, k, y)
    flt = FILTERS[(attrs["mode"], bool(attrs["antialias"]))](a.scale, float(attrs["cubic_coeff_a"]))
    start = tir.Cast(expr_dtype(y), tir.floor(bounded(x, a.size, flt.taps))) - (flt.taps // 2 - 1)
    ids = [start + t for t in range(flt.taps)]
    cs = flt.coefficients(x - tir.floor(x))
    if attrs["exclude_outside"]:
        cs = [tir.Select((i >= 0) & (i < a.size), c, f64(0.0)) for i, c in zip(ids, cs)]
        total = _sum(cs)
        divisor = tir.Select(total == f64(0.0), f64(1.0), total)
    else:
        divisor = _sum(cs) if flt.normalised else None
    return [(_clamp(i, a.size), c) for i, c in zip(ids, cs)], divisor, outside


def _compute_dtype(dtype: str) -> str:
    """Where weighted sums are taken: float32 for float32 and narrower floats, float64 for float64
    and integers (whose results are rounded, as the reference's float64 ones are)."""
    return "float32" if dtype in ("float32", "float16", "bfloat16") else F64


def saturate(v: PrimExpr, dtype: str) -> PrimExpr:
    """A float result as `dtype`: integers rounded half to even and clamped to the type's range
    (onnx.numpy_helper.saturate_cast)."""
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        v = tir.max(tir.min(tir.nearbyint(v), f64(float(info.max))), f64(float(info.min)))
    return tir.Cast(dtype, v)


def _check(x: Value, attrs: dict) -> None:
    mode, ctm = attrs["mode"], attrs["coordinate_transformation_mode"]
    if mode not in MODES:
        raise OpError(f"resize: mode must be one of {', '.join(MODES)}, got {mode!r}")
    if ctm not in COORDINATES:
        raise OpError(f"resize: coordinate_transformation_mode must be one of {', '.join(COORDINATES)}, got {ctm!r}")
    if attrs["nearest_mode"] not in NEAREST:
        raise OpError(f"resize: nearest_mode must be one of {', '.join(NEAREST)}, got {attrs['nearest_mode']!r}")
    if mode == "nearest" and attrs["antialias"]:
        raise OpError("resize: antialias applies to the linear and cubic modes, not nearest")
    if mode != "nearest" and (x.dtype == "bool" or not x.dtype.startswith(("float", "int", "uint", "bfloat"))):
        raise OpError(f"resize: {mode} interpolation needs a numeric input, got {x.dtype}")
    if ctm == "tf_crop_and_resize" and attrs["roi"] is None:
        raise OpError("resize: tf_crop_and_resize needs a roi")
    if x.ndim == 0:
        raise OpError("resize: the input must have at least one dim")


@register_op("resize", OpPattern.INJECTIVE, num_inputs=1, samples=True,
             attrs={"scales": None, "sizes": None, "axes": None, "mode": "nearest",
                    "coordinate_transformation_mode": "half_pixel", "nearest_mode": "round_prefer_floor",
                    "cubic_coeff_a": -0.75, "exclude_outside": False, "antialias": False, "roi": None,
                    "extrapolation_value": 0.0, "keep_aspect_ratio_policy": "stretch", "roi_dtype": "float32"})
def resize(inputs: Sequence[Value], attrs: dict) -> Value:
    """Resize by `scales` or to `sizes` (over `axes`, default all), as ONNX Resize: mode nearest
    (nearest_mode), linear or cubic (cubic_coeff_a, exclude_outside, antialias), any
    coordinate_transformation_mode (roi, its type roi_dtype, and extrapolation_value for
    tf_crop_and_resize)."""
    (x,) = inputs
    _check(x, attrs)
    axes = resize_axes(x.shape, attrs)
    crop = attrs["coordinate_transformation_mode"] == "tf_crop_and_resize"
    moved = [k for k, a in enumerate(axes) if not a.is_identity(crop)]
    plan = _Plan(axes, moved, COORDINATES[attrs["coordinate_transformation_mode"]], crop, attrs)
    out_shape = tuple(a.out for a in axes)
    if attrs["mode"] == "nearest":
        return lazy(out_shape, x.dtype, lambda *i: _nearest(x, plan, i))
    flt = FILTERS[(attrs["mode"], bool(attrs["antialias"]))]
    reads = math.prod(flt(axes[k].scale, float(attrs["cubic_coeff_a"])).taps for k in moved)
    if reads > MAX_READS:  # the expression (and its compile time) grows with the reads
        raise OpError(f"resize: {attrs['mode']}{' antialias' if attrs['antialias'] else ''} at scales "
                      f"{[round(axes[k].scale, 4) for k in moved]} of axes {moved} reads {reads} input elements "
                      f"per output (at most {MAX_READS} are supported)")
    acc = _compute_dtype(x.dtype)
    return lazy(out_shape, x.dtype, lambda *i: _interpolated(x, plan, i, acc))


def _fill(plan: _Plan, dtype: str) -> PrimExpr:
    """extrapolation_value as `dtype` (saturated for integers, as the reference casts it)."""
    e = float(plan.attrs["extrapolation_value"])
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        return tir.const(int(np.clip(np.round(e), info.min, info.max)), dtype)
    return tir.const(e, dtype)


def _with_extrapolation(plan: _Plan, outside: list[PrimExpr], value: PrimExpr, dtype: str) -> PrimExpr:
    if not outside:
        return value
    cond = outside[0]
    for c in outside[1:]:
        cond = cond | c
    return tir.Select(cond, _fill(plan, dtype), value)


def _nearest(x: Value, plan: _Plan, i) -> PrimExpr:
    idx, outside, inside = list(i), [], []
    for k in plan.moved:
        idx[k], on_axis, out = _pick(plan, k, i[k])
        inside += [on_axis] if on_axis is not None else []
        outside += [out] if out is not None else []
    value = x(*idx)
    if inside:  # exclude_outside: the one weight renormalised is 0 where the pick fell off the axis
        value = tir.Select(_all(inside), value, tir.const(0, x.dtype))
    return _with_extrapolation(plan, outside, value, x.dtype)


def _all(conds: list[PrimExpr]) -> PrimExpr:
    out = conds[0]
    for c in conds[1:]:
        out = out & c
    return out


def _interpolated(x: Value, plan: _Plan, i, acc: str) -> PrimExpr:
    taps, divisors, outside = {}, [], []
    for k in plan.moved:
        taps[k], divisor, out = _window(plan, k, i[k])
        divisors += [divisor] if divisor is not None else []
        outside += [out] if out is not None else []

    def total(pos: int, idx: list) -> PrimExpr:
        """The sum over axis moved[pos]'s taps of the sums over the earlier axes' (the reference
        interpolates axis by axis, first axis first)."""
        if pos < 0:
            v = x(*idx)
            return v if expr_dtype(v) == acc else tir.Cast(acc, v)
        k = plan.moved[pos]
        terms = []
        for j, c in taps[k]:
            sub = list(idx)
            sub[k] = j
            terms.append(tir.Cast(acc, c) * total(pos - 1, sub))
        return _sum(terms)

    value = total(len(plan.moved) - 1, list(i)) if plan.moved else tir.Cast(acc, x(*i))
    if divisors:
        d = divisors[0]
        for e in divisors[1:]:
            d = d * e
        value = value / tir.Cast(acc, d)
    if acc != x.dtype:
        value = saturate(value, x.dtype)
    return _with_extrapolation(plan, outside, value, x.dtype)
