"""Shape arithmetic over symbolic dims at import: what PyTorch's exports compute from `Shape`.

Why: an export that reads a size at run time (`x.view(x.size(0), -1)`, attention's
`reshape(b, s, heads, d)`, ViT's `class_token.expand(n, -1, -1)`) becomes Shape -> Gather ->
Unsqueeze -> Concat -> Reshape / Expand. With fixed shapes the importer folds all of it to
constants; with a dim kept symbolic (`import_onnx(dynamic=True)`) the same arithmetic folds here.

What: the Shape of a tensor with a symbolic dim is a numpy object array holding ints and the
graph's dim expressions (graph/dims.py: int64 TE variables and expressions of them). The ops
such exports use on shapes (`FOLDERS`: Gather, Unsqueeze, Squeeze, Concat, Slice, Cast to an
integer type, Identity, integer arithmetic, comparisons and Where) fold over it as they fold over
int64 constants; a comparison is decided for every size the dims may take (each dim at least 1)
or refused in one line. Consumers that take a shape turn it into their attrs (converters:
Reshape and Expand a target, Range a length, Slice of a tensor an end); a shape read as data
(`seq_len * positions`) is the `dims` op, computed in the kernel that reads it
(ImportContext.node). Anything else over a shape value is refused in one line.
"""
from __future__ import annotations

import operator
from typing import Callable, Sequence

import numpy as np
from tvm import sym
from tvm import tirx as tir

from ...graph.dims import dim_vars, is_symbolic
from ...ops.value import dim_of
from .context import OnnxNode, Unsupported

# ops whose converter takes a shape value as a shape input (a Reshape's target, a Range's limit,
# a Slice's ends on a tensor), where folding would need a constant
TAKES_SHAPES = frozenset(("Reshape", "Expand", "Range", "Slice"))
INT_TYPES = frozenset((6, 7, 12, 13))  # ONNX's INT32, INT64, UINT32, UINT64


def is_shape_value(v) -> bool:
    """Whether `v` is a folded value holding a symbolic dim (an object array)."""
    return isinstance(v, np.ndarray) and v.dtype == object


def shape_value(dims: Sequence) -> np.ndarray:
    """A Shape node's value: int64 where every dim is a size, else an object array."""
    values = np.empty(len(dims), dtype=object)
    values[:] = list(dims)
    return _out(values)


def _normal(d):
    """An int for a fixed size (an IntImm or numpy integer), else the simplified expression."""
    if isinstance(d, (int, np.integer)):
        return int(d)
    if isinstance(d, tir.IntImm) or is_symbolic(d):
        return dim_of(d)
    raise Unsupported(f"a shape entry {d!r} is not an integer")


def _objects(v: np.ndarray) -> np.ndarray:
    return v if v.dtype == object else v.astype(np.int64).astype(object)


def _out(v: np.ndarray) -> np.ndarray:
    """An object result back to int64 where no symbolic entry is left."""
    flat = [_normal(x) for x in np.asarray(v, dtype=object).reshape(-1)]
    if any(is_symbolic(x) for x in flat):
        out = np.empty(len(flat), dtype=object)
        out[:] = flat
        return out.reshape(np.shape(v))
    return np.asarray(flat, dtype=np.int64).reshape(np.shape(v))


def decide(cond, what: str) -> bool:
    """A comparison of dim expressions, for every size the dims may take (each at least 1)."""
    if isinstance(cond, (bool, np.bool_)):
        return bool(cond)
    if hasattr(cond, "asobject"):  # `a == b` on expressions is TVM's deferred EqualOp
        cond = cond.asobject()
    ana = sym.Analyzer()
    for v in dim_vars([[cond]]).values():
        ana.update(v, sym.ConstIntBound(1, 2 ** 62))
    if ana.can_prove(cond):
        return True
    if ana.can_prove(tir.Not(cond)):
        return False
    raise Unsupported(f"{what}: whether {cond} holds depends on the run-time sizes")


def _elementwise(fn: Callable, arrays: Sequence[np.ndarray]) -> np.ndarray:
    return np.frompyfunc(fn, len(arrays), 1)(*[_objects(a) for a in arrays])


def _int(x):
    return tir.const(x, "int64") if isinstance(x, int) else x


def _div(a, b):
    """ONNX Div on integers truncates; dims are positive, so it is floor division."""
    if isinstance(a, int) and isinstance(b, int):
        return int(a / b) if b else 0
    return tir.floordiv(_int(a), _int(b))


_ARITH = {"Add": operator.add, "Sub": operator.sub, "Mul": operator.mul, "Div": _div,
          "Max": lambda a, b: tir.max(_int(a), _int(b)) if is_symbolic(a) or is_symbolic(b) else max(a, b),
          "Min": lambda a, b: tir.min(_int(a), _int(b)) if is_symbolic(a) or is_symbolic(b) else min(a, b)}
_COMPARE = {"Equal": operator.eq, "Less": operator.lt, "Greater": operator.gt, "LessOrEqual": operator.le,
            "GreaterOrEqual": operator.ge}


def _compare(op: Callable, what: str) -> Callable:
    def cmp(a, b):
        if isinstance(a, int) and isinstance(b, int):
            return op(a, b)
        return decide(op(_int(a), _int(b)) if op is not operator.eq else tir.EQ(_int(a), _int(b)), what)
    return cmp


def fold(n: OnnxNode, values: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Node `n` over folded inputs, one of them a shape value; Unsupported where `n` is not
    shape arithmetic this folds."""
    what = f"{n.op_type} over symbolic dims"
    op = n.op_type
    if op in _ARITH:
        return [_out(_elementwise(_ARITH[op], values))]
    if op in _COMPARE:
        return [np.asarray(_elementwise(_compare(_COMPARE[op], what), values), dtype=bool)]
    if op == "Where":
        cond, a, b = values
        if cond.dtype == object:
            raise Unsupported(f"{what}: the condition is a shape value")
        return [_out(np.where(cond.astype(bool), _objects(a), _objects(b)))]
    x = values[0]
    if not is_shape_value(x) and op not in ("Concat", "Shape"):
        # a tensor's own values, cut or indexed by sizes known only at run time
        raise Unsupported(f"{op}: its {_role(n, values)} is computed from symbolic dims, which it does not take "
                          f"(import with input_shapes= to fix the sizes)")
    if op == "Identity":
        return [x]
    if op == "Shape":  # of a shape value: its length is fixed
        return [np.asarray(x.shape[n.attr("start", 0):n.attr("end", None)], dtype=np.int64)]
    if op == "Cast":
        if int(n.attr("to")) not in INT_TYPES:
            raise Unsupported(f"{what}: a cast of a shape to a non-integer type")
        return [x]
    if op == "Gather":
        return [_out(np.take(_objects(x), values[1].astype(np.int64), axis=int(n.attr("axis", 0))))]
    if op in ("Unsqueeze", "Squeeze"):
        axes = n.attr("axes") if n.opset < 13 else (None if len(values) < 2 else values[1])
        axes = None if axes is None else [int(a) for a in np.asarray(axes).reshape(-1)]
        if op == "Squeeze":
            return [_out(np.squeeze(x, axis=None if axes is None else tuple(axes)))]
        nd = x.ndim + len(axes)
        for a in sorted(a + nd if a < 0 else a for a in axes):
            x = np.expand_dims(x, a)
        return [x]
    if op == "Concat":
        return [_out(np.concatenate([_objects(v) for v in values], axis=int(n.attr("axis"))))]
    if op == "Slice" and n.opset >= 10:
        return [_out(_slice(x, values[1:]))]
    if op == "Reshape" and n.opset >= 5 and values[1].dtype != object:
        return [_out(np.reshape(x, [int(s) for s in values[1].reshape(-1)]))]
    raise Unsupported(f"{op} of a shape that holds symbolic dims is not supported (import with input_shapes= "
                      f"to fix the sizes)")


def _role(n: OnnxNode, values: Sequence) -> str:
    """Which input of `n` is the shape value (for an error line)."""
    names = {"Slice": ("data", "starts", "ends", "axes", "steps"), "Range": ("start", "limit", "delta"),
             "Gather": ("data", "indices"), "Tile": ("input", "repeats")}.get(n.op_type, ())
    k = next((k for k, v in enumerate(values) if is_shape_value(v)), 0)
    return names[k] if k < len(names) else f"input {k}"


def _slice(x: np.ndarray, args: Sequence[np.ndarray]) -> np.ndarray:
    if any(a is not None and np.asarray(a).dtype == object for a in args):
        raise Unsupported("Slice of a shape: its starts, ends, axes and steps must be fixed")
    ints = [None if a is None else [int(v) for v in np.asarray(a).reshape(-1)] for a in args]
    starts, ends = ints[0], ints[1]
    axes = ints[2] if len(ints) > 2 and ints[2] is not None else list(range(len(starts)))
    steps = ints[3] if len(ints) > 3 and ints[3] is not None else [1] * len(starts)
    index = [slice(None)] * x.ndim
    for a, s, e, st in zip(axes, starts, ends, steps):
        index[a % x.ndim] = slice(s, e, st)
    return x[tuple(index)]


def target_dims(v: np.ndarray) -> list:
    """A shape input's entries: ints and dim expressions."""
    return [_normal(d) for d in np.asarray(v, dtype=object).reshape(-1)]
