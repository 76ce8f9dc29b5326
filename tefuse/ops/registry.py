"""Operator registry: each op registers its pattern (for fusion) and its TE compute.

Shape and dtype inference run the compute itself on placeholders, so an op's shape rule
lives in exactly one place.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from ..errors import OpError
from .value import Value


class OpPattern(enum.IntEnum):
    """Relay's op patterns; fusion rules compare them by order."""

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_ELEMWISE_FUSABLE = 4
    OPAQUE = 8


Compute = Callable[[Sequence[Value], dict], Value]


@dataclass(frozen=True)
class OpDef:
    name: str
    pattern: OpPattern
    compute: Compute
    # schedule-template family for anchors ("conv2d", "dense", "pool", "reduce", "softmax")
    anchor: Optional[str] = None
    num_inputs: Optional[int] = None  # None: variadic
    attrs: dict[str, Any] = field(default_factory=dict)  # defaults; unknown attrs are refused
    doc: str = ""

    def normalize_attrs(self, attrs: dict) -> dict:
        unknown = set(attrs) - set(self.attrs)
        if unknown:
            raise OpError(f"{self.name}: unknown attribute(s) {sorted(unknown)}; "
                          f"known: {sorted(self.attrs)}")
        out = dict(self.attrs)
        out.update(attrs)
        return out


_REGISTRY: dict[str, OpDef] = {}


def register_op(name: str, pattern: OpPattern, *, anchor: Optional[str] = None,
                num_inputs: Optional[int] = None, attrs: Optional[dict] = None):
    """Decorator registering a compute function under `name`."""

    def deco(fn: Compute) -> Compute:
        if name in _REGISTRY:
            raise ValueError(f"op {name!r} registered twice")
        _REGISTRY[name] = OpDef(name, pattern, fn, anchor, num_inputs, dict(attrs or {}),
                                (fn.__doc__ or "").strip())
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
