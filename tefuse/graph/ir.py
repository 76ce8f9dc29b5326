"""Graph IR: nodes with op, attrs, inputs and inferred shape/dtype; a builder; a text form.

Shapes and dtypes are inferred when a node is created by running the op's compute on
placeholders, so a bad edge fails at the node that introduces it, named.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional, Sequence

import numpy as np
from tvm import te

from ..errors import GraphError, OpError
from ..ops import OpPattern, Value, get_op
from .dims import Dim, shape_str, symbolic_dim
from .lowbit import LOGICAL, is_lowbit, storage_dtype, to_storage

INPUT, CONST = "input", "constant"


@dataclass(eq=False)
class Node:
    """One value in the graph: a graph input, a constant, or an op applied to other nodes."""

    name: str
    op: str
    inputs: list["Node"]
    attrs: dict[str, Any]
    shape: tuple  # ints; a symbolic dim is an int64 TE expression of dim variables (graph/dims.py)
    dtype: str
    value: Optional[np.ndarray] = None  # constants only

    @property
    def is_op(self) -> bool:
        return self.op not in (INPUT, CONST)

    @property
    def pattern(self) -> OpPattern:
        return get_op(self.op).pattern if self.is_op else OpPattern.OPAQUE

    @property
    def anchor_kind(self) -> Optional[str]:
        if not self.is_op:
            return None
        return get_op(self.op).anchor_kind([i.shape for i in self.inputs], self.shape, self.attrs)

    @property
    def geometry(self) -> Any:
        """The op's typed shape facts (Conv2dGeometry, GemmGeometry...), None without them."""
        if not self.is_op:
            return None
        return get_op(self.op).geometry_of([i.shape for i in self.inputs], self.shape, self.attrs)

    def __repr__(self) -> str:
        return f"%{self.name}"

    def type_str(self) -> str:
        return f"{self.dtype}[{shape_str(self.shape)}]"


def check_dtype(dtype: Any, where: str) -> None:
    """A dtype numpy knows (ml_dtypes adds bfloat16, the float8s, int4): "float33" is refused
    here, by name, not at build."""
    import ml_dtypes  # noqa: F401 - registers its types' names with numpy

    try:
        np.dtype(str(dtype))
    except TypeError:
        raise GraphError(f"{where}: unknown dtype {str(dtype)!r} (float32, float16, bfloat16, int8, ...)") from None


def _check_numbers(op: str, attrs: dict) -> None:
    """An elementwise op's numeric parameters (leaky_relu's alpha, clip's bounds) are numbers, not NaN."""
    from ..ops.elemwise import UNARY

    if op not in UNARY:
        return
    for k, v in attrs.items():
        if isinstance(v, (float, np.floating)) and v != v:
            raise OpError(f"{op}: {k} must be a number, got nan")


def infer(op: str, attrs: dict, inputs: Sequence[Node], where: str) -> tuple[dict, tuple, str]:
    """Normalised attrs and the output shape/dtype of `op`; errors name `where`."""
    try:
        opdef = get_op(op)
        attrs = opdef.normalize_attrs(attrs)
        _check_numbers(op, attrs)
        if opdef.num_inputs is not None and len(inputs) != opdef.num_inputs:
            raise OpError(f"{op} takes {opdef.num_inputs} input(s), got {len(inputs)}")
        vals = [Value.of_tensor(te.placeholder(i.shape, i.dtype, f"in{k}")) for k, i in enumerate(inputs)]
        out = opdef.compute(vals, attrs)
    except OpError as e:
        shapes = ", ".join(f"{i.name}: {i.type_str()}" for i in inputs)
        raise GraphError(f"node {where!r} ({op}): {e} [inputs: {shapes}]") from None
    return attrs, out.shape, out.dtype


@dataclass
class Graph:
    """A DAG of nodes with named inputs and ordered outputs."""

    inputs: list[Node]
    outputs: list[Node]
    nodes: list[Node] = field(default_factory=list)  # topological order, inputs/consts included

    def __post_init__(self) -> None:
        if not self.nodes:
            self.nodes = topo_order(self.outputs)
        names = [n.name for n in self.nodes]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise GraphError(f"duplicate node names: {sorted(dup)}")
        missing = [n.name for n in self.nodes if n.op == INPUT and n not in self.inputs]
        if missing:
            raise GraphError(f"graph uses input(s) {missing} that are not declared graph inputs")

    def consumers(self) -> dict[Node, list[Node]]:
        out: dict[Node, list[Node]] = {n: [] for n in self.nodes}
        for n in self.nodes:
            for i in n.inputs:
                out[i].append(n)
        return out

    def reader_counts(self) -> dict[int, int]:
        """id(node) -> how many readers its value has: the nodes reading it, and the caller once
        for a graph output."""
        readers = {id(n): len(c) for n, c in self.consumers().items()}
        for o in self.outputs:
            readers[id(o)] += 1
        return readers

    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise GraphError(f"no node named {name!r}")

    @property
    def constants(self) -> list[Node]:
        return [n for n in self.nodes if n.op == CONST]

    def with_constants(self, values: dict) -> "Graph":
        """The graph with the named inputs bound to constant arrays (a FusionPlan's weights known
        at build time, as ONNX initializers are), so weight passes may rewrite them."""
        unknown = set(values) - {i.name for i in self.inputs}
        if unknown:
            raise GraphError(f"with_constants: no graph input named {sorted(unknown)}")
        new: dict[int, Node] = {}
        for n in self.nodes:
            if n.op == INPUT and n.name in values:
                v = np.asarray(values[n.name])
                if str(v.dtype) != n.dtype or tuple(v.shape) != n.shape:
                    raise GraphError(f"with_constants: input {n.name!r} is {n.type_str()}, "
                                     f"got {v.dtype}{list(v.shape)}")
                new[id(n)] = Node(n.name, CONST, [], {}, n.shape, n.dtype, v)
            elif n.is_op:
                new[id(n)] = Node(n.name, n.op, [new[id(i)] for i in n.inputs], n.attrs, n.shape, n.dtype)
            else:
                new[id(n)] = n
        return Graph([i for i in self.inputs if i.name not in values], [new[id(o)] for o in self.outputs])

    def text(self) -> str:
        """Readable form, one node a line, e.g. `%relu_0 = relu(%conv2d_0) : float32[1,8,8,8]`."""
        ins = ", ".join(f"%{n.name}: {n.type_str()}" for n in self.inputs)
        lines = [f"graph({ins}) {{"]
        for n in self.nodes:
            if n.op == INPUT:
                continue
            if n.op == CONST:
                lines.append(f"  %{n.name} = constant() : {n.type_str()}")
                continue
            args = [repr(i) for i in n.inputs]
            opdef = get_op(n.op)
            args += [f"{k}={_fmt(v)}" for k, v in n.attrs.items() if opdef.attrs.get(k) != v]
            lines.append(f"  %{n.name} = {n.op}({', '.join(args)}) : {n.type_str()}")
        lines.append(f"  return {', '.join(repr(o) for o in self.outputs)}")
        lines.append("}")
        return "\n".join(lines)

    __str__ = text


def _fmt(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(_fmt(x) for x in v) + "]"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def fresh_name(taken: set[str], base: str) -> str:
    """`base`, else `base_1`, `base_2`...: the first not in `taken` (which then holds it). For
    graph rewrites that add nodes beside existing names."""
    name, k = base, 1
    while name in taken:
        name, k = f"{base}_{k}", k + 1
    taken.add(name)
    return name


@dataclass
class RewriteContext:
    """What a rewrite rule may use beside the node: the graph's names (for `fresh_name`) and the
    rebuilt counterpart of any node already visited (`new`)."""

    names: set[str]
    rebuilt: dict[int, "Node"] = field(default_factory=dict)

    def new(self, old: "Node") -> "Node":
        return self.rebuilt[id(old)]


# a rewrite's rule: (the node, its rebuilt inputs, the context) -> its replacement, or None to
# keep the node (on the rebuilt inputs)
RewriteRule = Callable[[Node, list[Node], RewriteContext], Optional[Node]]


def op_node(name: str, op: str, inputs: Sequence[Node], attrs: dict) -> Node:
    """A new op node, attrs normalised and shape/dtype inferred (errors name `name`)."""
    attrs, shape, dtype = infer(op, attrs, inputs, name)
    return Node(name, op, list(inputs), attrs, tuple(shape), dtype)


def pad_after(x: Node, axis: int, extra: int, names: set[str], suffix: str = "pad") -> Node:
    """A new `pad` node: x with `extra` zeros after the end of `axis` (negative: from the last),
    named `{x}_{suffix}` (a fresh name); for graph passes that widen an axis."""
    rank = len(x.shape)
    pads = [0] * (2 * rank)
    pads[rank + axis % rank] = extra
    return op_node(fresh_name(names, f"{x.name}_{suffix}"), "pad", [x], {"pads": tuple(pads)})


def rewrite(graph: Graph, rule: RewriteRule) -> Graph:
    """The graph rebuilt in topological order with each op node replaced as `rule` says; graph
    passes (attention, split-K) share this walk instead of each keeping one."""
    ctx = RewriteContext({n.name for n in (*graph.nodes, *graph.inputs)})
    new = ctx.rebuilt
    for n in graph.nodes:
        if not n.is_op:
            new[id(n)] = n
            continue
        inputs = [new[id(i)] for i in n.inputs]
        out = rule(n, inputs, ctx)
        new[id(n)] = out if out is not None else Node(n.name, n.op, inputs, n.attrs, n.shape, n.dtype)
    return Graph(list(graph.inputs), [new[id(o)] for o in graph.outputs])


def topo_order(outputs: Iterable[Node]) -> list[Node]:
    order: list[Node] = []
    state: dict[int, int] = {}
    for root in outputs:
        stack = [(root, False)]
        while stack:
            n, done = stack.pop()
            if done:
                if state.get(id(n)) != 2:
                    state[id(n)] = 2
                    order.append(n)
                continue
            if state.get(id(n)):
                continue
            state[id(n)] = 1
            stack.append((n, True))
            stack.extend((i, False) for i in reversed(n.inputs) if not state.get(id(i)))
    return order


class UnknownOpAttribute(OpError, AttributeError):
    """`builder.frobnicate`: an OpError (as before) that is also an AttributeError, so that
    hasattr(), getattr(..., default) and completion treat it as a missing attribute."""


class GraphBuilder:
    """Builds a graph node by node: `b.conv2d(x, w, padding=1)` or `b.op("conv2d", x, w)`."""

    def __init__(self) -> None:
        self._inputs: list[Node] = []
        self._names: set[str] = set()
        self._count = itertools.count()
        self._dims: dict[str, Any] = {}  # dim name -> its variable

    def _name(self, base: str, name: Optional[str]) -> str:
        if name is None:
            name = f"{base}_{next(self._count)}"
            while name in self._names:
                name = f"{base}_{next(self._count)}"
        elif name in self._names:
            raise GraphError(f"node name {name!r} used twice")
        self._names.add(name)
        return name

    def input(self, name: str, shape: Sequence[Dim], dtype: str = "float32") -> Node:
        """A graph input; a dim given as a name (str) is symbolic: inputs naming the same dim
        share one size, bound when the graph runs (graph/dims.py)."""
        try:
            dims = tuple(shape)
        except TypeError:
            raise GraphError(f"input {name!r}: shape must be a sequence of integers, got {shape!r}") from None
        # a name is not a number spelled as a string ("2" is a size given wrongly, not a name)
        if not all((isinstance(s, (int, np.integer)) and not isinstance(s, bool))
                   or (isinstance(s, str) and s and not s.strip().lstrip("+-").replace(".", "", 1).isdigit())
                   for s in dims):
            raise GraphError(f"input {name!r}: dims must be integers or dim names (not numbers as text), got {dims}")
        if any(not isinstance(s, str) and int(s) < 1 for s in dims):
            raise GraphError(f"input {name!r}: every dim must be >= 1, got {dims}")
        check_dtype(dtype, f"input {name!r}")
        attrs = {LOGICAL: str(dtype)} if is_lowbit(dtype) else {}  # kept in its byte storage (lowbit.py)
        shape_ = tuple(self._dim(s) if isinstance(s, str) else int(s) for s in dims)
        n = Node(self._name("input", name), INPUT, [], attrs, shape_, storage_dtype(dtype))
        self._inputs.append(n)
        return n

    def _dim(self, name: str):
        """The one variable of dim `name` in this graph."""
        if name not in self._dims:
            self._dims[name] = symbolic_dim(name)
        return self._dims[name]

    def discard(self, nodes: Sequence[Node]) -> None:
        """Forget nodes created for a step that was then refused (their names become free)."""
        for n in nodes:
            self._names.discard(n.name)
            if n in self._inputs:
                self._inputs.remove(n)

    @property
    def inputs(self) -> list[Node]:
        return list(self._inputs)

    def const(self, value, dtype: Optional[str] = None, name: Optional[str] = None) -> Node:
        arr = np.asarray(value, dtype=dtype) if dtype else np.asarray(value)
        if arr.dtype == np.float64 and dtype is None:
            arr = arr.astype("float32")
        attrs = {LOGICAL: str(arr.dtype)} if is_lowbit(arr.dtype) else {}  # kept in its byte storage
        arr = to_storage(arr)
        return Node(self._name("const", name), CONST, [], attrs, tuple(arr.shape), str(arr.dtype), arr)

    def op(self, op: str, *inputs: Node, name: Optional[str] = None, **attrs) -> Node:
        for i in inputs:
            if not isinstance(i, Node):
                raise GraphError(f"{op}: inputs must be graph nodes, got {type(i).__name__}")
        nm = self._name(op, name)
        try:
            attrs, shape, dtype = infer(op, attrs, inputs, nm)
        except GraphError:
            self._names.discard(nm)  # a refused node leaves its name free
            raise
        return Node(nm, op, list(inputs), attrs, tuple(shape), dtype)

    def __getattr__(self, op: str):
        # ops registered after this module was imported (the rest are methods, see below)
        if op.startswith("_"):
            raise AttributeError(op)
        try:
            get_op(op)
        except OpError as e:
            raise UnknownOpAttribute(f"GraphBuilder has no attribute {op!r} ({e})") from None
        return lambda *inputs, name=None, **attrs: self.op(op, *inputs, name=name, **attrs)

    def build(self, outputs: Node | Sequence[Node]) -> Graph:
        outs = [outputs] if isinstance(outputs, Node) else list(outputs)
        return Graph(list(self._inputs), outs)


# names of the inputs of ops with more than one, for the methods' signatures ("x" for one input)
_INPUT_NAMES = {"conv2d": ("x", "weight"), "dense": ("x", "weight"), "matmul": ("a", "b"),
                "bias_add": ("x", "bias"), "batch_norm": ("x", "gamma", "beta", "mean", "var"),
                "where": ("condition", "x", "y"), "crop": ("image", "rects"), "crop_resize": ("image", "rects"),
                "nv12_to_rgb": ("y", "uv"), "i420_to_rgb": ("y", "u", "v")}


def _op_method(opdef) -> Any:
    """A method for one registered op whose signature (inputs by position, the op's attributes
    as keyword parameters with their defaults, `name=`) and doc are the op's, so that help(),
    dir(), inspect.signature and completion show them. Calls go through `op()`, whose errors
    name the node (an unknown attribute lists the known ones)."""
    import inspect

    n = opdef.num_inputs
    P = inspect.Parameter
    if n is None:
        names: tuple[str, ...] = ()
        params = [P("self", P.POSITIONAL_OR_KEYWORD), P("inputs", P.VAR_POSITIONAL)]
    else:
        names = _INPUT_NAMES.get(opdef.name) or (("x",) if n == 1 else ("x", "y") if n == 2
                                                  else tuple(f"x{k}" for k in range(n)))
        params = [P("self", P.POSITIONAL_OR_KEYWORD), *(P(i, P.POSITIONAL_OR_KEYWORD) for i in names)]
    attrs = [a for a in opdef.attrs if a.isidentifier() and a not in ("self", "name", "inputs", *names)]
    params += [P(a, P.KEYWORD_ONLY, default=opdef.attrs[a]) for a in attrs]
    params.append(P("name", P.KEYWORD_ONLY, default=None))
    opname = opdef.name

    def method(self, *inputs, name=None, **attrs):
        if names and any(k in attrs for k in names):  # inputs by keyword, as the signature allows
            ins = list(inputs)
            for k in names[len(ins):]:
                if k not in attrs:
                    break
                ins.append(attrs.pop(k))
            inputs = tuple(ins)
        return self.op(opname, *inputs, name=name, **attrs)

    method.__signature__ = inspect.Signature(params, return_annotation="Node")
    method.__name__ = opname
    method.__qualname__ = f"GraphBuilder.{opname}"
    what = f"{n} input{'s' if n != 1 else ''}" if n is not None else "any number of inputs"
    attr_doc = ", ".join(f"{a}={opdef.attrs[a]!r}" for a in attrs) or "none"
    method.__doc__ = (f"{opdef.doc or opname}\n\n"
                      f"Adds a `{opname}` node ({what}; fusion pattern {opdef.pattern.name.lower()}"
                      f"{', anchor of its kernel' if opdef.anchor else ''}) and returns it.\n"
                      f"Attributes (defaults): {attr_doc}. name: the node's name (default: generated).")
    return method


def _install_op_methods(cls: type) -> None:
    from ..ops import list_ops

    for opname in list_ops():
        if opname.isidentifier() and not hasattr(cls, opname):
            setattr(cls, opname, _op_method(get_op(opname)))


_install_op_methods(GraphBuilder)
