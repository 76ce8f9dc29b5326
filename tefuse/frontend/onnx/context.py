"""What converters and the importer share: the node view, the value environment, the failure type.

Kept apart from the importer so converters depend only on this (and the registry), never on
the module that runs them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence, Union

import numpy as np
import onnx
from onnx import numpy_helper

from ...errors import GraphError, OpError
from ...graph.ir import GraphBuilder, Node
from .lowbit import is_lowbit

Value = Union[Node, np.ndarray]  # a runtime graph node, or a value folded at import


class Unsupported(Exception):
    """Raised by a converter: this node (op, attribute or input form) cannot be imported."""


@dataclass
class OnnxNode:
    """An ONNX NodeProto with its attributes decoded, as converters see it."""

    name: str
    op_type: str
    domain: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any]
    opset: int
    proto: onnx.NodeProto

    def attr(self, key: str, default: Any = None) -> Any:
        return self.attrs.get(key, default)

    def input(self, k: int) -> Optional[str]:
        """Name of optional input k, or None when absent or empty."""
        return self.inputs[k] if k < len(self.inputs) and self.inputs[k] else None


def decode_bytes(v: Any) -> Any:
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, onnx.TensorProto):
        return numpy_helper.to_array(v)
    if isinstance(v, list):
        return [decode_bytes(x) for x in v]
    return v


class ImportContext:
    """What converters use: look up values, read constants, emit tefuse ops with fresh names."""

    def __init__(self, builder: GraphBuilder, reserved: set[str]):
        self.b = builder
        self.env: dict[str, Value] = {}
        self._const_nodes: dict[str, Node] = {}
        self._reserved = set(reserved)
        self._used: set[str] = set()
        self._count = 0
        self.graph_inputs: set[str] = set()  # names of the model's run-time inputs
        self.unusable: dict[str, str] = {}  # model inputs tefuse cannot hold: name -> what they are
        self.lowbit: dict[str, str] = {}  # run-time values of a low-precision type (lowbit.py): name -> type
        self.needs_const: set[str] = set()  # graph inputs some node asked for as a constant

    # -- names ------------------------------------------------------------------------------
    def fresh(self, base: str) -> str:
        """A node name derived from `base` that clashes with no ONNX value name."""
        while True:
            self._count += 1
            name = f"{base}.{self._count}"
            if name not in self._reserved and name not in self._used:
                self._used.add(name)
                return name

    def _claim(self, name: Optional[str], base: str) -> str:
        if name and name not in self._used:
            self._used.add(name)
            return name
        return self.fresh(name or base)

    # -- values -----------------------------------------------------------------------------
    def is_const(self, name: Optional[str]) -> bool:
        return name is not None and isinstance(self.env.get(name), np.ndarray)

    def const(self, name: Optional[str], what: str = "input") -> np.ndarray:
        """The folded value of `name`; Unsupported when it is only known at run time."""
        v = self.env.get(name) if name else None
        if not isinstance(v, np.ndarray):
            if name in self.graph_inputs:
                self.needs_const.add(name)
                raise Unsupported(f"{what} {name!r} must be a constant, but it is a model input; "
                                  f"import with constant_inputs={{{name!r}: value}} to specialize on it")
            raise Unsupported(f"{what} {name!r} must be a constant (an initializer or foldable "
                              f"subgraph); computed-at-run-time values are not supported here")
        return v

    def node(self, name: str) -> Node:
        """The graph node for `name`, creating a constant node for a folded value on first use."""
        v = self.env[name]
        if isinstance(v, Node):
            return v
        n = self._const_nodes.get(name)
        if n is None:
            if v.dtype == object:  # a shape over symbolic dims (shape_values.py), read as data
                zero = self.b.const(np.asarray(0, np.int64), dtype="int64", name=self.fresh("zero"))
                n = self._const_nodes[name] = self.b.op("dims", zero, values=tuple(v.reshape(-1)),
                                                        shape=tuple(v.shape), name=self._claim(name, "dims"))
                return n
            arr = np.asarray(v, order="C")  # (ascontiguousarray makes a 0-d value 1-d)
            if is_lowbit(arr.dtype):  # the builder keeps it in its byte storage
                self.lowbit[name] = str(arr.dtype)
            n = self._const_nodes[name] = self.b.const(arr, dtype=str(arr.dtype),
                                                       name=self._claim(name, "const"))
        return n

    def logical_dtype(self, name: str) -> str:
        """The ONNX-level dtype of a value: a low-precision type rather than its byte storage."""
        v = self.env[name]
        if isinstance(v, np.ndarray):
            return str(v.dtype)
        return self.lowbit.get(name, str(v.dtype))

    def shape(self, name: str) -> tuple[int, ...]:
        v = self.env[name]
        return tuple(v.shape)

    def dtype(self, name: str) -> str:
        v = self.env[name]
        return str(v.dtype)

    def scalar(self, value: float, dtype: str) -> Node:
        """A scalar constant node (folded into kernels by lowering)."""
        return self.b.const(np.asarray(value, dtype=dtype), dtype=dtype, name=self.fresh("scalar"))

    def emit(self, op: str, inputs: Sequence[Union[Node, str]], out: Optional[str] = None,
             **attrs) -> Node:
        """Add tefuse op `op`; `out` names it after an ONNX value, else a fresh name is used."""
        ins = [self.node(i) if isinstance(i, str) else i for i in inputs]
        try:
            node = self.b.op(op, *ins, name=self._claim(out, op), **attrs)
        except (GraphError, OpError) as e:
            raise Unsupported(str(e)) from None
        if 0 in node.shape:  # an empty tensor has one value: a constant, no kernel computes it
            return self.b.const(np.zeros(node.shape, node.dtype), dtype=node.dtype, name=self.fresh(out or op))
        return node
