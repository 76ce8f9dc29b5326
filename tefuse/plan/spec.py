"""Chain specs for the command line: "conv2d(k=64,r=3,pad=1)+bias+batch_norm+relu", or an
image pipeline on an NHWC uint8 input: "crop_resize(n=5,h=60,w=60,keep=1)+normalize(mul=1.4,
sub=0.5,div=255)+rgb2bgr".

A chain is a FusionPlan written as text; weights and other runtime operands become graph
inputs, so the same spec serves build, inspect, tune and bench.
"""
from __future__ import annotations

import re
from typing import Any, Optional

from ..errors import TefuseError
from ..graph.ir import Graph
from ..ops.color import CONVERSIONS
from ..target import TargetLike
from .fusion_plan import FusionPlan, TensorDesc

_ITEM = re.compile(r"^\s*([A-Za-z_][\w]*)\s*(?:\(([^()]*)\))?\s*$")


def parse_shape(text: str) -> tuple[int, ...]:
    """'1x64x56x56' or '1,64,56,56'."""
    try:
        return tuple(int(p) for p in re.split(r"[x,]", text.strip()) if p)
    except ValueError:
        raise TefuseError(f"bad shape {text!r}: use e.g. 1x64x56x56") from None


def _value(text: str) -> Any:
    text = text.strip()
    if re.fullmatch(r"\d+(-\d+)+", text):  # pads as top-left-bottom-right
        return tuple(int(p) for p in text.split("-"))
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def _params(text: str, item: str) -> dict[str, Any]:
    out = {}
    for part in filter(None, (p.strip() for p in (text or "").split(","))):
        if "=" not in part:
            raise TefuseError(f"chain item {item!r}: parameter {part!r} must be key=value")
        k, v = part.split("=", 1)
        out[k.strip()] = _value(v)
    return out


def _int(p: dict, key: str, item: str, default=None, minimum: int = 1):
    """An integer parameter (8.5, 'abc' and 1e3 are refused, never truncated)."""
    if key not in p:
        return default
    v = p.pop(key)
    if not isinstance(v, int) or v < minimum:
        raise TefuseError(f"chain item {item!r}: {key} must be an integer >= {minimum}, got {v!r}")
    return v


def _ints(p: dict, key: str, item: str, default, minimum: int, parts: tuple[int, ...]):
    """An integer, or integers joined by '-' (pad=t-l-b-r, stride=h-w)."""
    if key not in p:
        return default
    v = p.pop(key)
    ok = (isinstance(v, int) and v >= minimum) or (
        isinstance(v, tuple) and len(v) in parts and all(x >= minimum for x in v))
    if not ok:
        forms = " or ".join("N" if n == 1 else "-".join("N" * n) for n in (1, *parts))
        raise TefuseError(f"chain item {item!r}: {key} must be {forms} with integers >= {minimum}, "
                          f"got {v!r}")
    return v


def _conv(plan: FusionPlan, p: dict, item: str) -> None:
    c = plan.output_desc.shape[plan.channel_axis]
    k = _int(p, "k", item)
    kh, kw = _int(p, "kh", item), _int(p, "kw", item)
    r = _int(p, "r", item, 3)
    kh, kw = kh or r, kw or r
    groups = _int(p, "groups", item)
    depthwise = _int(p, "depthwise", item, 0, minimum=0)
    if depthwise not in (0, 1):
        raise TefuseError(f"chain item {item!r}: depthwise must be 0 or 1, got {depthwise!r}")
    if depthwise:
        if k is not None and k != c:
            raise TefuseError(f"chain item {item!r}: depthwise=1 gives k={c} (the input channels); "
                              f"k={k} conflicts")
        if groups is not None and groups != c:
            raise TefuseError(f"chain item {item!r}: depthwise=1 gives groups={c} (the input "
                              f"channels); groups={groups} conflicts")
        groups, k = c, c
    k = c if k is None else k
    groups = 1 if groups is None else groups
    stride = _ints(p, "stride", item, 1, 1, (2,))
    dil = _ints(p, "dilation", item, 1, 1, (2,))
    pad = _ints(p, "pad", item, 0, 0, (2, 4))
    if p:
        raise TefuseError(f"chain item {item!r}: unknown conv2d parameter(s) {sorted(p)}")
    if c % groups or k % groups:
        raise TefuseError(f"chain item {item!r}: groups={groups} must divide the input channels ({c}) "
                          f"and k ({k})")
    cg = c // groups
    shape = (k, cg, kh, kw) if plan.input.layout == "NCHW" else (kh, kw, cg, k)
    plan.add_conv(TensorDesc(shape, plan.input.dtype), stride=stride, padding=pad, dilation=dil, groups=groups)


def _no_params(p: dict, item: str, name: str) -> None:
    if p:
        raise TefuseError(f"chain item {item!r}: {name} takes no parameters, got {sorted(p)}")


def _numbers(p: dict, item: str, keys: tuple[str, ...]) -> dict[str, float]:
    unknown = sorted(set(p) - set(keys))
    if unknown:
        raise TefuseError(f"chain item {item!r}: unknown parameter(s) {unknown}; it takes {', '.join(keys)}")
    for k, v in p.items():
        if isinstance(v, (str, tuple)):
            raise TefuseError(f"chain item {item!r}: {k} must be a number, got {v!r}")
    return {k: float(v) for k, v in p.items()}


def _crop_resize(plan: FusionPlan, p: dict, item: str) -> None:
    """crop_resize(n=5,h=60,w=60,mode=linear,keep=1,background=0,coordinate=half_pixel,sizes=0):
    rectangles (and with sizes=1 each plane's output size) set at run time."""
    n, h, w = _int(p, "n", item, 1), _int(p, "h", item), _int(p, "w", item)
    if h is None or w is None:
        raise TefuseError(f"chain item {item!r}: crop_resize needs h and w (the planes' size)")
    mode = p.pop("mode", "linear")
    keep = _int(p, "keep", item, 0, minimum=0)
    if keep not in (0, 1):
        raise TefuseError(f"chain item {item!r}: keep must be 0 or 1, got {keep!r}")
    sizes = _int(p, "sizes", item, 0, minimum=0)
    if sizes not in (0, 1):
        raise TefuseError(f"chain item {item!r}: sizes must be 0 or 1, got {sizes!r}")
    coordinate = str(p.pop("coordinate", "half_pixel"))
    bg = _numbers({k: p.pop(k) for k in list(p) if k == "background"}, item, ("background",))
    if p:
        raise TefuseError(f"chain item {item!r}: unknown crop_resize parameter(s) {sorted(p)}; it takes n, h, w, "
                          f"mode, keep, background, coordinate, sizes")
    plan.add_crop_resize(n, (h, w), mode=str(mode), keep_aspect_ratio=bool(keep), background=bg.get("background", 0.0),
                         coordinate=coordinate, plane_sizes=bool(sizes))


def build_plan(text: str, input_shape: tuple, dtype: str = "float32", layout: str = "NCHW") -> FusionPlan:
    plan = FusionPlan(TensorDesc(tuple(input_shape), dtype, layout))
    for item in text.split("+"):
        m = _ITEM.match(item)
        if not m:
            why = "unbalanced parentheses" if item.count("(") != item.count(")") or item.count("(") > 1 \
                else "use name or name(key=value,...)"
            raise TefuseError(f"bad chain item {item.strip()!r} in {text!r}: {why}")
        name, p = m.group(1), _params(m.group(2), item)
        if name in ("conv2d", "conv"):
            _conv(plan, p, item)
        elif name in ("bias", "bias_add"):
            _no_params(p, item, name)
            plan.add_bias()
        elif name in ("batch_norm", "bn"):
            eps = p.pop("eps", 1e-5)
            if p:
                raise TefuseError(f"chain item {item!r}: unknown batch_norm parameter(s) {sorted(p)}; "
                                  f"it takes eps")
            if isinstance(eps, str) or isinstance(eps, tuple) or not eps > 0:
                raise TefuseError(f"chain item {item!r}: eps must be a positive number, got {eps!r}")
            plan.add_batch_norm(epsilon=float(eps))
        elif name == "crop_resize":
            _crop_resize(plan, p, item)
        elif name == "normalize":
            plan.add_normalize(**_numbers(p, item, ("mul", "sub", "div")))
        elif name in CONVERSIONS:
            _no_params(p, item, name)
            plan.add_color_convert(name)
        elif name in ("add", "sub", "mul", "div", "maximum", "minimum"):
            _no_params(p, item, name)
            plan.add_elementwise(name)
        else:
            plan.add_activation(name, **p)
    return plan


def parse_chain(text: str, input_shape: tuple, dtype: str = "float32", layout: str = "NCHW",
                target: Optional[TargetLike] = None, precision: str = "fp32") -> Graph:
    """The graph of a chain spec; weights and operands are graph inputs. With a target, the graph
    the plan compiles for it and `precision`: its conv weight in the layout the kernel reads
    (FusionPlan.kernel_graph: OHWI where Hopper's wgmma runs), so the command line builds and
    tunes the kernel a plan runs."""
    plan = build_plan(text, input_shape, dtype, layout)
    return plan.graph if target is None else plan.kernel_graph(target, precision)
