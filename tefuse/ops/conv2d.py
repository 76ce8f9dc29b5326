"""conv2d in NCHW (OIHW weights) and NHWC (HWIO weights, or OHWI with weight_layout="OHWI": the
implicit GEMM's B stored [N, K], as Hopper's wgmma reads it; graph/weights.py): stride,
asymmetric padding, dilation, groups (depthwise when groups == in_channels).

The data read goes through a `pad_temp` stage that schedules inline or cache in shared
memory; any injective prologue arriving as a lazy value is folded into that stage.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from tvm import te, tirx as tir

from ..errors import OpError
from .registry import OpPattern, register_op
from .codes import CODES, operand_dtypes, widen
from .value import MATH, OUT_DTYPE, Value, tf32_operand, te_compute

WEIGHT_LAYOUT = {"NCHW": "OIHW", "NHWC": "HWIO"}  # each layout's default
WEIGHT_LAYOUTS = {"NCHW": ("OIHW",), "NHWC": ("HWIO", "OHWI")}  # what each layout reads


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def _ints(v, name: str) -> tuple[int, ...]:
    """An int or a sequence of ints (never a float: 1.5 is refused, not truncated)."""
    if _is_int(v):
        return (int(v),)
    try:
        items = tuple(v)
    except TypeError:
        raise OpError(f"{name} must be an integer or a tuple of integers, got {v!r}") from None
    if not items or not all(_is_int(x) for x in items):
        raise OpError(f"{name} must be an integer or a tuple of integers, got {v!r}")
    return tuple(int(x) for x in items)


def normalize_pair(v, name: str) -> tuple[int, int]:
    v = _ints(v, name)
    if len(v) == 1:
        return (v[0], v[0])
    if len(v) != 2:
        raise OpError(f"{name} must be an int or a pair, got {v}")
    return v


def normalize_padding(p) -> tuple[int, int, int, int]:
    """int, (h, w) or (top, left, bottom, right) -> (top, left, bottom, right)."""
    p = _ints(p, "padding")
    if len(p) == 1:
        p = p * 4
    if len(p) == 2:
        p = (p[0], p[1], p[0], p[1])
    if len(p) != 4 or min(p) < 0:
        raise OpError(f"padding must be int, (h, w) or (top, left, bottom, right) >= 0, got {p}")
    return p


@dataclass(frozen=True)
class Conv2dGeometry:
    """Everything a schedule or a workload key needs to know about one conv2d."""

    layout: str
    n: int
    c: int
    h: int
    w: int
    k: int
    kh: int
    kw: int
    groups: int
    stride: tuple[int, int]
    padding: tuple[int, int, int, int]
    dilation: tuple[int, int]
    oh: int
    ow: int
    weight_layout: str = ""  # the layout's default (WEIGHT_LAYOUT) when empty
    split_k: int = 1  # > 1: partial sums over that many input-channel slices (graph/split_k.py)

    @property
    def b_nk(self) -> bool:
        """The implicit GEMM's B stored [N, K] (K = ky, kx, c fastest): an OHWI weight."""
        return self.weight_layout == "OHWI"

    @property
    def depthwise(self) -> bool:
        return self.groups > 1 and self.groups == self.c

    @property
    def anchor_kind(self) -> str:
        """Depthwise convs have templates of their own."""
        return "depthwise_conv2d" if self.depthwise else "conv2d"

    @property
    def channels_per_group(self) -> int:
        """The input-channel reduction extent (rc) of one output."""
        return self.c // self.groups

    @property
    def multiplier(self) -> int:
        """Output channels per group (a depthwise conv's channel multiplier)."""
        return self.k // self.groups

    # the conv as an implicit GEMM: M = N*OH*OW output pixels, N = K channels, R = C/g*KH*KW
    @property
    def m(self) -> int:
        return self.n * self.oh * self.ow

    @property
    def r(self) -> int:
        return self.channels_per_group * self.kh * self.kw

    @property
    def r_split(self) -> int:
        """The reduction extent of one split-K slice (r itself without a split)."""
        return self.r // self.split_k

    @property
    def rc_axis(self) -> int:
        """Position of rc among the conv's reduction axes: (rc, ry, rx) NCHW, (ry, rx, rc) NHWC."""
        return 0 if self.layout == "NCHW" else 2

    @property
    def tiled_axes(self) -> tuple[int, int, int]:
        """Positions of the channel, OH and OW dims in the output shape without its batch dim."""
        return (0, 1, 2) if self.layout == "NCHW" else (2, 0, 1)


def _layout_hint(layout: str, data_shape, weight_shape, g: int) -> str:
    """When the weight fits the other layout's weight format, say so (OIHW given to NHWC...)."""
    other = "NHWC" if layout == "NCHW" else "NCHW"
    c = data_shape[1] if layout == "NCHW" else data_shape[3]
    k, cg = (weight_shape[3], weight_shape[2]) if other == "NHWC" else (weight_shape[0], weight_shape[1])
    if g >= 1 and c % g == 0 and k % g == 0 and cg == c // g:
        return (f"; the weight looks like {WEIGHT_LAYOUT[other]}, but a {layout} conv2d reads "
                f"its weight as {WEIGHT_LAYOUT[layout]}")
    return ""


def conv2d_geometry(data_shape, weight_shape, attrs: dict) -> Conv2dGeometry:
    layout = attrs["layout"]
    if layout not in WEIGHT_LAYOUT:
        raise OpError(f"conv2d: layout must be NCHW or NHWC, got {layout!r}")
    if len(data_shape) != 4 or len(weight_shape) != 4:
        raise OpError(f"conv2d: data and weight must be 4-D, got {tuple(data_shape)} and {tuple(weight_shape)}")
    wl = attrs.get("weight_layout") or WEIGHT_LAYOUT[layout]
    if wl not in WEIGHT_LAYOUTS[layout]:
        raise OpError(f"conv2d: a {layout} conv2d reads its weight as {' or '.join(WEIGHT_LAYOUTS[layout])}, "
                      f"not {wl!r}")
    if layout == "NCHW":
        n, c, h, w = data_shape
        k, cg, kh, kw = weight_shape
    else:
        n, h, w, c = data_shape
        kh, kw, cg, k = weight_shape if wl == "HWIO" else (*weight_shape[1:3], weight_shape[3], weight_shape[0])
    if not _is_int(attrs["groups"]) or attrs["groups"] < 1:
        raise OpError(f"conv2d: groups must be a positive integer, got {attrs['groups']!r}")
    g = int(attrs["groups"])
    if g < 1 or c % g or k % g:
        raise OpError(f"conv2d: groups={g} must divide in_channels={c} and out_channels={k} "
                      f"(weight {tuple(weight_shape)} read as {wl})"
                      f"{_layout_hint(layout, data_shape, weight_shape, g)}")
    if cg != c // g:
        raise OpError(f"conv2d: weight {tuple(weight_shape)} read as {wl} has {cg} input channels "
                      f"per group, data {tuple(data_shape)} ({layout}) with groups={g} needs {c // g}"
                      f"{_layout_hint(layout, data_shape, weight_shape, g)}")
    sh, sw = normalize_pair(attrs["strides"], "strides")
    dh, dw = normalize_pair(attrs["dilation"], "dilation")
    pad = normalize_padding(attrs["padding"])
    if min(sh, sw, dh, dw) < 1:
        raise OpError(f"conv2d: strides and dilation must be >= 1, got {(sh, sw)} and {(dh, dw)}")
    oh = (h + pad[0] + pad[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (w + pad[1] + pad[3] - dw * (kw - 1) - 1) // sw + 1
    if oh < 1 or ow < 1:
        raise OpError(f"conv2d: kernel {kh}x{kw} (dilation {dh}x{dw}) does not fit input {h}x{w} "
                      f"padded by {pad}")
    split = attrs.get("split_k", 1)
    if not _is_int(split) or split < 1 or (split > 1 and (layout != "NHWC" or g != 1 or c % split)):
        raise OpError(f"conv2d: split_k={split!r} must be a positive integer dividing in_channels={c} "
                      f"(split_k > 1: NHWC, groups=1 only)")
    return Conv2dGeometry(layout, n, c, h, w, k, kh, kw, g, (sh, sw), pad, (dh, dw), oh, ow,
                          "" if wl == WEIGHT_LAYOUT[layout] else wl, int(split))


def pad_stage(x: Value, layout: str, pad: tuple[int, int, int, int], name: str = "pad_temp") -> te.Tensor:
    """Padded copy of the spatial dims as a TE stage (inlined or shared-cached by schedules)."""
    t, l, b, r = pad
    hax, wax = (2, 3) if layout == "NCHW" else (1, 2)
    shape = list(x.shape)
    h, w = shape[hax], shape[wax]
    shape[hax] += t + b
    shape[wax] += l + r
    zero = tir.const(0, x.dtype)

    def fn(*i):
        i = list(i)
        y, xx = i[hax], i[wax]
        src = list(i)
        src[hax], src[wax] = y - t, xx - l
        if not any(pad):
            return x(*src)
        cond = tir.all(y >= t, y < t + h, xx >= l, xx < l + w)
        return tir.if_then_else(cond, x(*src), zero)

    return te_compute(shape, fn, name=name, tag="pad")


def _geometry(in_shapes, out_shape, attrs: dict) -> Conv2dGeometry:
    return conv2d_geometry(in_shapes[0], in_shapes[1], attrs)


@register_op("conv2d", OpPattern.OUT_ELEMWISE_FUSABLE, anchor="conv2d", num_inputs=2,
             attrs={"strides": 1, "padding": 0, "dilation": 1, "groups": 1, "layout": "NCHW"},
             geometry=_geometry, optional={**MATH, **OUT_DTYPE, **CODES, "weight_layout": "", "split_k": 1})
def conv2d(inputs: Sequence[Value], attrs: dict) -> Value:
    """2-D convolution, accumulating in float32 for float16 inputs; math='tf32' rounds float32
    operands to TF32 first (tensor cores' tf32 mode). split_k=S (NHWC, groups=1) gives S partial
    sums over C/S input channels each, [S, N, OH, OW, K] in the accumulator's dtype, for a
    `split_sum` to add up: S times the blocks where the output alone would leave SMs idle."""
    data, weight = (tf32_operand(v, attrs) for v in inputs)
    if data.dtype != weight.dtype:
        raise OpError(f"conv2d: data dtype {data.dtype} differs from weight dtype {weight.dtype}")
    geo = conv2d_geometry(data.shape, weight.shape, attrs)
    acc, res = operand_dtypes(data.dtype, attrs)
    padded = pad_stage(data, geo.layout, geo.padding)
    wt = weight.materialize("weight_in") if weight.is_lazy else weight.tensor
    cg, kg = geo.c // geo.groups, geo.k // geo.groups
    (sh, sw), (dh, dw) = geo.stride, geo.dilation
    rc = te.reduce_axis((0, cg // geo.split_k), "rc")
    ry = te.reduce_axis((0, geo.kh), "ry")
    rx = te.reduce_axis((0, geo.kw), "rx")
    cast = widen(attrs, (lambda e: tir.Cast(acc, e)) if acc != data.dtype else (lambda e: e))
    ch = (lambda k: rc) if geo.groups == 1 else (lambda k: (k // kg) * cg + rc)

    if geo.layout == "NCHW":
        def body(n, k, y, x):
            return te.sum(cast(padded[n, ch(k), y * sh + ry * dh, x * sw + rx * dw])
                          * cast(wt[k, rc, ry, rx]), axis=[rc, ry, rx])
        shape = (geo.n, geo.k, geo.oh, geo.ow)
    else:
        w_at = (lambda k, c: wt[k, ry, rx, c]) if geo.b_nk else (lambda k, c: wt[ry, rx, c, k])

        def nhwc(n, y, x, k, data_c, weight_c):
            return te.sum(cast(padded[n, y * sh + ry * dh, x * sw + rx * dw, data_c])
                          * cast(w_at(k, weight_c)), axis=[ry, rx, rc])

        if geo.split_k > 1:  # slice s reduces input channels [s*C/S, (s+1)*C/S): a leading batch axis
            cs = geo.c // geo.split_k
            shape = (geo.split_k, geo.n, geo.oh, geo.ow, geo.k)
            # the partial sums stay in the accumulator's dtype, for split_sum to add up
            def sliced(s, n, y, x, k):
                return nhwc(n, y, x, k, s * cs + rc, s * cs + rc)
            return Value.of_tensor(te_compute(shape, sliced, name="conv2d", tag="conv2d"))

        def body(n, y, x, k):
            return nhwc(n, y, x, k, ch(k), rc)
        shape = (geo.n, geo.oh, geo.ow, geo.k)
    out = te_compute(shape, body, name="conv2d", tag="conv2d")
    if acc != res:
        return Value(shape, res, lambda *i: tir.Cast(res, out(*i)))
    return Value.of_tensor(out)
