"""Operator registry: each op registers its pattern (for fusion) and its TE compute.

Shape and dtype inference run the compute itself on placeholders, so an op's shape rule
lives in exactly one place.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from ..errors import OpError
from .value import Value, hinted_dim


class OpPattern(enum.IntEnum):
    """Relay's op patterns; fusion rules compare them by order."""

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_ELEMWISE_FUSABLE = 4
    OPAQUE = 8


Compute = Callable[[Sequence[Value], dict], Value]
Shape = tuple[int, ...]
# (input shapes, output shape, normalised attrs) -> a frozen dataclass describing an anchor
GeometryFn = Callable[[Sequence[Shape], Shape, dict], Any]


@dataclass(frozen=True)
class OpDef:
    name: str
    pattern: OpPattern
    compute: Compute
    # schedule-template family for anchors ("conv2d", "dense", "pool", "lrn", "reduce", "softmax", "norm")
    anchor: Optional[str] = None
    num_inputs: Optional[int] = None  # None: variadic
    attrs: dict[str, Any] = field(default_factory=dict)  # defaults; unknown attrs are refused
    doc: str = ""
    # an anchor's typed shape facts (Conv2dGeometry, GemmGeometry...): lowering hands them to
    # the template in KernelInfo.geometry, so templates never re-derive them from raw attrs
    geometry: Optional[GeometryFn] = None
    # accepted, but kept out of a node's attrs while at their default, so adding one leaves
    # every existing workload key (and tuning record) as it was; e.g. matrix products' `math`
    optional: dict[str, Any] = field(default_factory=dict)
    # reads a window of source elements per output element, with coordinates to compute
    # (resize, crop_resize): many instructions an element, which a schedule can share between
    # the channels of one pixel (KernelInfo.samples)
    samples: bool = False
    # each output element is one input's element, the input picked by the index (concat): in a
    # group without an anchor lowering keeps it a stage of its own, which a template may compute
    # a vector at a time, its branch then taken once a vector, not once a lane (KernelInfo.pick_stages)
    picks_input: bool = False

    def geometry_of(self, in_shapes: Sequence[Sequence[int]], out_shape: Sequence[int], attrs: dict):
        """This op's geometry for one node, or None when it declares none."""
        if self.geometry is None:
            return None
        return self.geometry([tuple(hinted_dim(d) for d in s) for s in in_shapes],
                             tuple(hinted_dim(d) for d in out_shape), attrs)

    def anchor_kind(self, in_shapes: Sequence[Sequence[int]], out_shape: Sequence[int],
                    attrs: dict) -> Optional[str]:
        """The template family of a node of this op: `anchor`, unless its geometry names a
        narrower one (`anchor_kind`: a depthwise conv2d has templates of its own)."""
        if self.anchor is None:
            return None
        geo = self.geometry_of(in_shapes, out_shape, attrs)
        return getattr(geo, "anchor_kind", None) or self.anchor

    def normalize_attrs(self, attrs: dict) -> dict:
        unknown = set(attrs) - set(self.attrs) - set(self.optional)
        if unknown:
            raise OpError(f"{self.name}: unknown attribute(s) {sorted(unknown)}; "
                          f"known: {sorted({**self.attrs, **self.optional})}")
        out = dict(self.attrs)
        out.update(attrs)
        for k, default in self.optional.items():
            if out.get(k, default) == default:
                out.pop(k, None)
        return out


_REGISTRY: dict[str, OpDef] = {}


def register_op(name: str, pattern: OpPattern, *, anchor: Optional[str] = None,
                num_inputs: Optional[int] = None, attrs: Optional[dict] = None,
                geometry: Optional[GeometryFn] = None, optional: Optional[dict] = None,
                samples: bool = False, picks_input: bool = False):
    """Decorator registering a compute function under `name`."""
    if anchor is not None and not isinstance(anchor, str):
        raise TypeError(f"op {name!r}: anchor must be a template family name, got {anchor!r}")

    def deco(fn: Compute) -> Compute:
        if name in _REGISTRY:
            raise ValueError(f"op {name!r} registered twice")
        _REGISTRY[name] = OpDef(name, pattern, fn, anchor, num_inputs, dict(attrs or {}),
                                (fn.__doc__ or "").strip(), geometry, dict(optional or {}), samples,
                                picks_input)
        return fn

    return deco


def get_op(name: str) -> OpDef:
    try:
        return _REGISTRY[name]
    except KeyError:
        close = [n for n in _REGISTRY if n.startswith(name[:3])]
        hint = f"; did you mean {', '.join(sorted(close))}?" if close else ""
        raise OpError(f"unknown op {name!r}{hint}") from None


def list_ops() -> list[str]:
    return sorted(_REGISTRY)
