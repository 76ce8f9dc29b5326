"""Layout conversion: an NCHW graph rewritten to compute its convolutions channels-last (NHWC).

Tensor-core convolutions want NHWC (their im2col loads and output stores vectorise along C);
most ONNX models are NCHW. Like Relay's ConvertLayout, the pass walks the graph in
topological order and tags each value it holds in NHWC ("a 4-D NCHW value, stored as
(0, 2, 3, 1)"):
- conv2d NCHW becomes conv2d NHWC; a constant OIHW weight is converted to HWIO once, here
  (a computed weight gets a transpose node); a same-shape NCHW operand of a tagged one (a
  residual from the graph input) is read through a transpose (0, 2, 3, 1);
- layout-agnostic ops keep the tag: elementwise unary ops (and cast); broadcast binaries,
  `where` and `sum_n` whose other operands are tagged values of the same shape or constants
  (scalars, per-channel [C,1,1] / [1,C,1,1] vectors and any other broadcastable constant are
  converted here); bias_add, batch_norm, lrn, softmax/log_softmax, layer_norm, concat and keepdims
  reductions with their axes remapped; pools and global pools by their `layout` attr; a constant
  pad with its pads reordered;
- everything else (flatten, reshape, transpose, dense, slice, non-keepdims reductions,
  mixed-layout operands, unknown ops) reads NCHW: its tagged input gets a `transpose` node
  (0, 3, 1, 2) of its own (one consumer each, so fusion computes it inside that consumer's
  load; a transpose shared by two kernels would be a kernel of its own);
- reshape/flatten/squeeze of an N,C,1,1 value (a global pool's) read the NHWC value as it is:
  both layouts list its elements in the same order;
- a model's own transpose to channels-last (0, 2, 3, 1) of a tagged value is the NHWC value
  itself, and its transpose back (0, 3, 1, 2) of a 4-D value is that value tagged: both become
  identities (ConvNeXt permutes around every LayerNorm and MLP, TensorFlow exports around every
  conv), so no transpose is left around the convs between them.
Graph inputs stay NCHW: a value that a conv reads in NHWC gets one transpose (0, 2, 3, 1),
which fusion computes inside the conv's load (an injective prologue). Graph outputs keep their
layout and names: a tagged output is transposed back under its own name (fused into the
producing kernel's store). Graphs with no NCHW conv2d are returned unchanged.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..errors import GraphError
from ..ops import OpPattern, get_op
from .ir import CONST, Graph, Node, fresh_name, infer

LAYOUTS = ("NCHW", "NHWC")
TO_NHWC, TO_NCHW = (0, 2, 3, 1), (0, 3, 1, 2)
OIHW_TO_HWIO = (2, 3, 1, 0)
# an NCHW axis -> the same dim's axis in NHWC
AXIS = {0: 0, 1: 3, 2: 1, 3: 2}
# ops that keep the tag with a remapped channel/other axis attr ("axis" int or "axes" list)
AXIS_OPS = ("bias_add", "batch_norm", "lrn", "softmax", "log_softmax", "layer_norm")
# ops whose parameters (scales, zero points, multipliers) are per tensor or 1-D along their
# "axis" of the data input: in NHWC only the axis moves (where they run along it: _per_axis_kind)
PER_AXIS_OPS = ("quantize_linear", "dequantize_linear", "requantize")
POOLS = ("max_pool2d", "avg_pool2d", "global_avg_pool2d", "global_max_pool2d")
# ops that depend on their input's element order only (not its layout)
FLAT_ORDER_OPS = ("reshape", "flatten", "squeeze")
REDUCES = ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod")


def check_layout(layout: Optional[str]) -> Optional[str]:
    if layout is not None and layout not in LAYOUTS:
        raise GraphError(f"unknown layout {layout!r}; use one of {', '.join(LAYOUTS)} (or None)")
    return layout


def _same_order(x: Node) -> bool:
    """Whether an NCHW value lists its elements in the same order as its NHWC form."""
    return len(x.shape) == 4 and (x.shape[1] == 1 or x.shape[2] * x.shape[3] == 1)


def _per_axis_kind(ins: list[Node], attrs: dict) -> Optional[str]:
    """How a PER_AXIS_OPS node's parameters read the data: "tensor" (one value each, whatever
    their rank or source: a constant, a graph input, a value the graph computes), "axis" (1-D,
    one of them with more than one value, along the node's axis), or None (blocked, or broadcast
    against the data's shape: laid out along the imported axes)."""
    if attrs.get("block_size", 0) > 0:
        return None
    if all(all(d == 1 for d in p.shape) for p in ins[1:]):
        return "tensor"
    if all(len(p.shape) <= 1 or all(d == 1 for d in p.shape) for p in ins[1:]):
        return "axis"
    return None


def auto_layout(precision: str, channels_last: tuple[str, ...]) -> Optional[str]:
    """The build's default: NHWC where the target's templates want convs of this precision
    channels-last (GraphPolicy.channels_last: tensor cores on CUDA), else None (the graph is left
    alone)."""
    return "NHWC" if precision in channels_last else None


class _Rewriter:
    def __init__(self, graph: Graph):
        self.graph = graph
        self.consumers = graph.consumers()
        self.outputs = {id(o) for o in graph.outputs}
        self.names = {n.name for n in graph.nodes}
        self.new: dict[int, Node] = {}  # original node -> its rewrite
        self.tagged: set[int] = set()  # rewritten nodes holding an NCHW value in NHWC
        # transposes made for the node being rewritten, one per value: a transpose has one
        # consumer, so fusion computes it inside that consumer's load (a shared one would be
        # a kernel of its own)
        self.to_nchw: dict[int, Node] = {}
        self.to_nhwc: dict[int, Node] = {}
        self.weights: dict[int, Node] = {}  # OIHW constant -> HWIO constant
        # a tagged graph output -> its transpose back, under the output's name; NCHW readers
        # inside the graph read that one (a second transpose would split the store)
        self.out_back: dict[int, Node] = {}

    def fresh(self, base: str) -> str:
        return fresh_name(self.names, base)

    def make(self, name: str, op: str, inputs: list[Node], attrs: dict) -> Node:
        attrs, shape, dtype = infer(op, attrs, inputs, name)
        return Node(name, op, inputs, attrs, tuple(shape), dtype)

    def transpose(self, x: Node, axes: tuple, name: str) -> Node:
        return self.make(name, "transpose", [x], {"axes": axes})

    def nchw(self, x: Node) -> Node:
        if id(x) not in self.tagged:
            return x
        if id(x) in self.out_back:
            return self.out_back[id(x)]
        if id(x) not in self.to_nchw:
            self.to_nchw[id(x)] = self.transpose(x, TO_NCHW, self.fresh(f"{x.name}_to_nchw"))
        return self.to_nchw[id(x)]

    def nhwc(self, x: Node) -> Node:
        if id(x) in self.tagged:
            return x
        if id(x) not in self.to_nhwc:
            self.to_nhwc[id(x)] = self.transpose(x, TO_NHWC, self.fresh(f"{x.name}_nhwc"))
        return self.to_nhwc[id(x)]

    def const_nhwc(self, c: Node) -> Optional[Node]:
        """A constant operand broadcast against an NCHW value, in NHWC; None if it cannot be."""
        if c.op != CONST or len(c.shape) > 4:
            return None
        if all(d == 1 for d in c.shape):
            return c  # a scalar broadcasts the same in any layout
        v = np.asarray(c.value).reshape((1,) * (4 - len(c.shape)) + tuple(c.shape))
        v = np.ascontiguousarray(v.transpose(TO_NHWC))
        return Node(self.fresh(f"{c.name}_nhwc"), CONST, [], {}, tuple(v.shape), c.dtype, v)

    def weight_hwio(self, w: Node) -> Node:
        if w.op != CONST:
            return self.transpose(w, OIHW_TO_HWIO, self.fresh(f"{w.name}_hwio"))
        if id(w) not in self.weights:
            # the constant keeps its name when only NCHW convs read it as a weight
            only_convs = all(c.op == "conv2d" and c.attrs["layout"] == "NCHW" and c.inputs[0] is not w
                             for c in self.consumers.get(w, []))
            v = np.ascontiguousarray(np.asarray(w.value).transpose(OIHW_TO_HWIO))
            name = w.name if only_convs else self.fresh(f"{w.name}_hwio")
            self.weights[id(w)] = Node(name, CONST, [], {}, tuple(v.shape), w.dtype, v)
        return self.weights[id(w)]

    # -- one node ---------------------------------------------------------------------------
    def node(self, n: Node) -> Node:
        if not n.is_op:
            return n
        ins = [self.new[id(i)] for i in n.inputs]
        self.to_nchw, self.to_nhwc = {}, {}
        # a tagged output is renamed; its transpose back takes the output's name (see convert_layout)
        name = n.name
        if n.op in FLAT_ORDER_OPS and len(ins) == 1 and id(ins[0]) in self.tagged and _same_order(n.inputs[0]):
            # N,C,1,1 (or N,1,H,W): NHWC holds the elements in NCHW's order, no transpose needed
            out = self.make(name, n.op, ins, dict(n.attrs))
            if out.shape == n.shape:
                return out
            return self.make(name, "reshape", ins, {"shape": n.shape})
        if n.op == "transpose" and len(n.shape) == 4 and id(n) not in self.outputs:
            # a model that permutes to channels-last itself (ConvNeXt's blocks, LayerNorm2d,
            # TensorFlow exports) names the value the tag already stores: an identity, no copy
            perm = tuple(int(a) % 4 for a in n.attrs["axes"])
            if perm == TO_NHWC and id(ins[0]) in self.tagged:
                return self.make(name, "identity", ins, {})  # the NHWC value, plain from here on
            if perm == TO_NCHW and id(ins[0]) not in self.tagged:
                out = self.make(name, "identity", ins, {})  # an NCHW value held as NHWC: tagged
                self.tagged.add(id(out))
                return out
        got = self._nhwc(n, ins)
        if got is None:
            return self.make(name, n.op, [self.nchw(i) for i in ins], dict(n.attrs))
        op, inputs, attrs = got
        if id(n) in self.outputs:
            name = self.fresh(f"{n.name}_nhwc")
        out = self.make(name, op, inputs, attrs)
        self.tagged.add(id(out))
        if id(n) in self.outputs:
            self.out_back[id(out)] = self.transpose(out, TO_NCHW, n.name)
        return out

    def _nhwc(self, n: Node, ins: list[Node]) -> Optional[tuple[str, list[Node], dict]]:
        """(op, inputs, attrs) computing `n` in NHWC, or None where it reads NCHW."""
        op, attrs = n.op, dict(n.attrs)
        tagged = [id(i) in self.tagged for i in ins]
        if op == "conv2d":
            if attrs["layout"] != "NCHW":
                return None
            attrs["layout"] = "NHWC"
            return op, [self.nhwc(ins[0]), self.weight_hwio(ins[1])], attrs
        if not any(tagged) or len(n.shape) != 4:
            return None
        if op == "pad":  # a constant pad: its pads in NHWC order (a QDQ conv's data padded with its zero point)
            if not tagged[0]:
                return None
            p = [int(v) for v in attrs["pads"]]
            attrs["pads"] = tuple(p[a] for a in TO_NHWC) + tuple(p[4 + a] for a in TO_NHWC)
            return op, ins, attrs
        opdef = get_op(op)
        if opdef.pattern == OpPattern.ELEMWISE and opdef.num_inputs == 1:
            return op, ins, attrs  # unary elementwise, cast
        if op in PER_AXIS_OPS:
            kind = _per_axis_kind(ins, attrs)
            if kind is None or not tagged[0] or any(tagged[1:]):
                return None
            if kind == "axis":
                attrs["axis"] = AXIS[attrs["axis"] % 4]
            # per tensor: the axis means nothing and stays as imported; it is part of the
            # kernels' workload keys, which the shipped tuning logs are found by
            return op, ins, attrs
        if op in AXIS_OPS:
            if not tagged[0] or any(tagged[1:]):
                return None
            attrs["axis"] = AXIS[attrs["axis"] % 4]
            return op, ins, attrs
        if op in POOLS:
            if attrs["layout"] != "NCHW":
                return None
            attrs["layout"] = "NHWC"
            return op, ins, attrs
        if op in REDUCES:
            if not attrs["keepdims"]:
                return None
            axes = range(4) if attrs["axes"] is None else attrs["axes"]
            attrs["axes"] = sorted(AXIS[a % 4] for a in axes)
            return op, ins, attrs
        if op == "concat":
            if not all(tagged):
                return None
            attrs["axis"] = AXIS[attrs["axis"] % 4]
            return op, ins, attrs
        if opdef.pattern <= OpPattern.BROADCAST:  # binaries, where, sum_n
            inputs = []
            for i, t in zip(ins, tagged):
                if t:
                    if i.shape != tuple(n.shape[a] for a in TO_NHWC):
                        return None
                    inputs.append(i)
                    continue
                if i.op == CONST:
                    c = self.const_nhwc(i)
                elif i.shape == n.shape:  # a same-shape NCHW operand (a residual): read transposed
                    c = self.nhwc(i)
                else:
                    c = None
                if c is None:
                    return None
                inputs.append(c)
            return op, inputs, attrs
        return None


def convert_layout(graph: Graph, layout: Optional[str] = "NHWC") -> Graph:
    """The graph with its NCHW convolutions (and what lies between them) in `layout`.

    "NCHW" and None leave the graph alone; so does "NHWC" on a graph with no NCHW conv2d.
    Inputs and outputs keep their names, shapes and layouts.
    """
    if check_layout(layout) != "NHWC":
        return graph
    if not any(n.op == "conv2d" and n.attrs["layout"] == "NCHW" for n in graph.nodes):
        return graph
    rw = _Rewriter(graph)
    for n in graph.nodes:
        rw.new[id(n)] = rw.node(n)
    outputs = []
    for o in graph.outputs:
        got = rw.new[id(o)]
        outputs.append(rw.out_back.get(id(got), got))
    return Graph(list(graph.inputs), outputs)
