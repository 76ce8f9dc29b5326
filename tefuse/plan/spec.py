"""Chain specs for the command line: "conv2d(k=64,r=3,pad=1)+bias+batch_norm+relu".

A chain is a FusionPlan written as text; weights and other runtime operands become graph
inputs, so the same spec serves build, inspect, tune and bench.
"""
from __future__ import annotations

import re
from typing import Any

from ..errors import TefuseError
from ..graph.ir import Graph
from .fusion_plan import FusionPlan, TensorDesc

_ITEM = re.compile(r"^\s*([A-Za-z_][\w]*)\s*(?:\((.*)\))?\s*$")


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


def _conv(plan: FusionPlan, p: dict, item: str) -> None:
    c = plan.output_desc.shape[plan.channel_axis]
    k = p.pop("k", c)
    kh, kw = p.pop("kh", None), p.pop("kw", None)
    r = p.pop("r", 3)
    kh, kw = kh or r, kw or r
    groups = p.pop("groups", 1)
    if p.pop("depthwise", 0):
        groups, k = c, c
    stride, pad, dil = p.pop("stride", 1), p.pop("pad", 0), p.pop("dilation", 1)
    if p:
        raise TefuseError(f"chain item {item!r}: unknown conv2d parameter(s) {sorted(p)}")
    cg = c // groups if groups else c
    shape = (k, cg, kh, kw) if plan.input.layout == "NCHW" else (kh, kw, cg, k)
    plan.add_conv(TensorDesc(shape, plan.input.dtype), stride=stride, padding=pad, dilation=dil, groups=groups)


def build_plan(text: str, input_shape: tuple, dtype: str = "float32", layout: str = "NCHW") -> FusionPlan:
    plan = FusionPlan(TensorDesc(tuple(input_shape), dtype, layout))
    for item in text.split("+"):
        m = _ITEM.match(item)
        if not m:
            raise TefuseError(f"bad chain item {item!r} in {text!r}")
        name, p = m.group(1), _params(m.group(2), item)
        if name in ("conv2d", "conv"):
            _conv(plan, p, item)
        elif name in ("bias", "bias_add"):
            plan.add_bias()
        elif name in ("batch_norm", "bn"):
            plan.add_batch_norm(epsilon=p.pop("eps", 1e-5))
        elif name in ("add", "sub", "mul", "div", "maximum", "minimum"):
            plan.add_elementwise(name)
        else:
            plan.add_activation(name, **p)
    return plan


def parse_chain(text: str, input_shape: tuple, dtype: str = "float32", layout: str = "NCHW") -> Graph:
    """The graph of a chain spec; weights and operands are graph inputs."""
    return build_plan(text, input_shape, dtype, layout).graph
