"""The converter registry, keyed by ONNX op type (no if-chains in the importer).

A converter maps one ONNX node onto tefuse ops with `ctx.emit`, and returns one value per
ONNX output (a graph Node, or a numpy array when the result is known at import time).
Attributes a converter does not list are refused by name before it runs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from .context import ImportContext, OnnxNode

ConvertFn = Callable[[ImportContext, OnnxNode], list]
FoldFn = Callable[[ImportContext, OnnxNode], Optional[list]]
CheckFn = Callable[[OnnxNode], Optional[str]]


@dataclass(frozen=True)
class Converter:
    fn: ConvertFn
    attrs: frozenset[str]
    foldable: bool = True  # all-constant inputs: evaluate at import instead of converting
    check: Optional[CheckFn] = None  # attribute-only checks, run even when inputs are unknown

    def problem(self, n: OnnxNode) -> Optional[str]:
        """Why this node cannot convert, judged from its attributes alone (None: looks fine)."""
        bad = sorted(set(n.attrs) - self.attrs)
        if bad:
            return f"unsupported attribute(s) {bad}"
        return self.check(n) if self.check else None


CONVERTERS: dict[str, Converter] = {}
FOLDERS: dict[str, FoldFn] = {}


def converter(*op_types: str, attrs: Sequence[str] = (), foldable: bool = True,
              check: Optional[CheckFn] = None):
    def deco(fn: ConvertFn) -> ConvertFn:
        for t in op_types:
            if t in CONVERTERS:
                raise ValueError(f"ONNX converter for {t!r} registered twice")
            CONVERTERS[t] = Converter(fn, frozenset(attrs), foldable, check)
        return fn
    return deco


def folder(*op_types: str):
    def deco(fn: FoldFn) -> FoldFn:
        for t in op_types:
            FOLDERS[t] = fn
        return fn
    return deco


def supported_ops() -> list[str]:
    """ONNX op types with a converter (others import only when constant-folded)."""
    return sorted(CONVERTERS)
