"""Sibling products made one wider product: convs that read the same input with the same
geometry, and Linears (a matmul by a constant 2-D weight) that read the same input, compute one
GEMM whose N is the sum of theirs (TensorRT's horizontal layer fusion; onnxruntime's attention
fusion packs a transformer's query, key and value Linears the same way).

Why: an Inception block (GoogLeNet, Inception-v3) runs three or four 1x1 convs on its input,
one a branch, each a GEMM of the same M and K and a small N (16 to 208 channels). At batch 1 on
an H200 each is a launch of a few thread blocks: GoogLeNet was 85 kernels, launch-bound. The
launches cannot share a kernel as they are (codegen/horizontal.py leaves tensor-core kernels
apart), but one conv of the concatenated weight computes them all: one launch, the input read
once instead of once a branch, and N tiles fuller (wider grids at batch 1). BERT's layers
(and DistilBERT's, ViT's of transformers) compute query, key and value as three Linears of the
same input: three of a layer's twelve kernels at batch 1.

The rule (`merge_siblings`):
- conv2d nodes that read the same input node with equal attributes (kernel taps, strides,
  padding, dilation, layout, weight layout, math, out_dtype, split_k 1) and groups == 1, whose
  weights are constants of one dtype: their implicit GEMMs differ only in N, any kernel size;
  Linears with equal attributes (split_k 1): matmul nodes (ONNX MatMul) whose weights are
  constant 2-D [K, N] (or [N, K] with trans_b), dense nodes (ONNX Gemm) whose weights are
  constant [N, K], of one dtype and K;
- at least two such siblings, each of whose output channels are a whole number of 16-byte
  vectors (8 fp16, 4 float32): each branch's channel slice of the wide output then starts on a
  16-byte boundary, so the consumers that read it (a 3x3 conv's operand copy, a concat) keep
  their vector loads;
- the elementwise chain after each product (bias_add or add by a constant, a folded
  batch-norm's multiply and add by per-channel constants, activations, casts) merges too, as
  far as every sibling has the same steps each with one consumer, its constants concatenated:
  the wide product keeps that epilogue in its kernel.
Each branch's last merged node becomes a `slice` of the wide result's channels (a conv's
channel axis, a Linear's last) under its own name (graph outputs keep theirs); its consumers
read the slice, fused into their loads as an injective prologue or into a concat's copy.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from ..ops import OpPattern, get_op
from ..ops.conv2d import WEIGHT_LAYOUT
from .ir import CONST, Graph, Node, RewriteContext, fresh_name, op_node, rewrite
from .weights import vector_lanes

log = logging.getLogger(__name__)

# ops of two inputs that may follow a product with a per-channel constant as the other operand
CHANNEL_BINARY = frozenset({"bias_add", "add", "sub", "mul", "div", "maximum", "minimum"})


@dataclass(frozen=True)
class _Product:
    """What the rule needs of one op kind: which of its nodes may merge, the output's channel
    axis (the one the branches are concatenated along), the weight's axis of those channels."""

    candidate: Callable[[Node], bool]
    channel_axis: Callable[[Node], int]
    out_axis: Callable[[Node], int]


def _conv_axis(conv: Node) -> int:
    return conv.attrs.get("layout", "NCHW").index("C")


def _conv_out_axis(conv: Node) -> int:
    """The weight's output-channel axis (O) in its layout."""
    g = conv.geometry
    return (g.weight_layout or WEIGHT_LAYOUT[g.layout]).index("O")


def _conv_candidate(n: Node) -> bool:
    return n.attrs.get("groups", 1) == 1 and n.attrs.get("split_k", 1) == 1 and _const_weight(n, 4)


def _linear_candidate(n: Node) -> bool:
    return n.attrs.get("split_k", 1) == 1 and len(n.inputs[0].shape) >= 2 and _const_weight(n, 2)


def _const_weight(n: Node, rank: int) -> bool:
    """A constant weight of `rank` and whole 16-byte vectors of output channels."""
    w = n.inputs[1]
    channels = n.shape[PRODUCTS[n.op].channel_axis(n)]
    return (w.op == CONST and not w.attrs and len(w.shape) == rank and isinstance(channels, int)
            and channels % vector_lanes(n.dtype) == 0)


def _last_axis(n: Node) -> int:
    return len(n.shape) - 1


PRODUCTS = {
    "conv2d": _Product(_conv_candidate, _conv_axis, _conv_out_axis),
    # a MatMul Linear: weight [K, N], or [N, K] with trans_b
    "matmul": _Product(_linear_candidate, _last_axis, lambda n: 0 if n.attrs.get("trans_b") else 1),
    "dense": _Product(_linear_candidate, _last_axis, lambda n: 0),  # a Gemm Linear: weight [N, K]
}


def _channel_axis(n: Node) -> int:
    return PRODUCTS[n.op].channel_axis(n)


def _out_axis(n: Node) -> int:
    return PRODUCTS[n.op].out_axis(n)


def _key(attrs: dict) -> tuple:
    """Attributes as a comparable key; an array's every value counts (its repr elides them)."""
    def one(v):
        if isinstance(v, np.ndarray):
            return "array", str(v.dtype), v.shape, v.tobytes()
        return repr(v)

    return tuple((k, one(v)) for k, v in sorted(attrs.items()))


def _candidate(n: Node) -> bool:
    return n.op in PRODUCTS and len(n.inputs) == 2 and PRODUCTS[n.op].candidate(n)


def _sibling_key(n: Node) -> tuple:
    """What siblings share: the op, the input, the attributes, the weight's dtype and its shape
    less O."""
    w = n.inputs[1]
    shape = list(w.shape)
    del shape[_out_axis(n)]
    return n.op, id(n.inputs[0]), _key(n.attrs), w.dtype, tuple(shape), n.dtype


def _per_channel(c: Node, y: Node, axis: int) -> Optional[tuple[int, ...]]:
    """Constant `c`'s shape as broadcast against `y` (left-padded with ones) where it varies at
    most along the channel `axis` and does not widen `y`; None otherwise."""
    rank = len(y.shape)
    if c.op != CONST or c.attrs or len(c.shape) > rank:
        return None
    shape = (1,) * (rank - len(c.shape)) + tuple(c.shape)
    if any(s != 1 for a, s in enumerate(shape) if a != axis) or shape[axis] not in (1, y.shape[axis]):
        return None
    return shape


def _step(prev: Node, nxt: Node, axis: int) -> Optional[tuple]:
    """The signature of elementwise step `nxt` after `prev` (equal signatures merge), None where
    it is not one this pass merges."""
    if not nxt.is_op:
        return None
    if nxt.pattern == OpPattern.ELEMWISE and get_op(nxt.op).num_inputs == 1:
        return nxt.op, _key(nxt.attrs)
    if nxt.op not in CHANNEL_BINARY or len(nxt.inputs) != 2 or nxt.shape != prev.shape:
        return None
    pos = nxt.inputs.index(prev)
    c = nxt.inputs[1 - pos]
    if nxt.op == "bias_add":
        ok = pos == 0 and c.op == CONST and not c.attrs and nxt.attrs["axis"] % len(prev.shape) == axis
    else:
        ok = _per_channel(c, prev, axis) is not None
    return (nxt.op, pos, _key(nxt.attrs), c.dtype) if ok else None


@dataclass
class _Siblings:
    """One merge: the products, each one's chain [product, step, ...] cut to the common length."""

    chains: list[list[Node]]
    offsets: list[int]  # each branch's first channel in the wide output
    wide: Optional[Node] = None  # the wide chain's last node, once built


def _chain(conv: Node, consumers: dict, outputs: set, axis: int) -> tuple[list[Node], list[tuple]]:
    nodes, sigs = [conv], []
    while True:
        n = nodes[-1]
        users = consumers[n]
        if id(n) in outputs or len(users) != 1:
            return nodes, sigs
        sig = _step(n, users[0], axis)
        if sig is None:
            return nodes, sigs
        nodes.append(users[0])
        sigs.append(sig)


# merged by default (driver.prepare_graph): measured faster on the H200 untuned (BERT-base at batch 1
# 0.90x -> 0.75x torch's time, DistilBERT 0.99x -> 0.75x, ViT 0.87x -> 0.71x; batch 32 1-11% less);
# sibling convs only with horizontal fusion
LINEARS = ("matmul", "dense")


def sibling_groups(graph: Graph, ops=tuple(PRODUCTS)) -> list[list[Node]]:
    """The products of the kinds `ops` that `merge_siblings` merges, each list one wide product's,
    in graph order."""
    groups: dict[tuple, list[Node]] = {}
    for n in graph.nodes:
        if n.op in ops and _candidate(n):
            groups.setdefault(_sibling_key(n), []).append(n)
    return [g for g in groups.values() if len(g) >= 2]


def merge_siblings(graph: Graph, ops=tuple(PRODUCTS)) -> Graph:
    """The graph with each set of sibling products of the kinds `ops` (conv2d, matmul, dense; see
    the module docstring) one product of their concatenated weights, their common elementwise
    chain merged after it, and each branch a channel slice of the result; a graph without
    siblings comes back as it is."""
    groups = sibling_groups(graph, ops)
    if not groups:
        return graph
    consumers = graph.consumers()
    outputs = {id(o) for o in graph.outputs}
    merges: dict[int, tuple[_Siblings, int]] = {}  # id(each branch's last merged node) -> (merge, branch)
    for convs in groups:
        axis = _channel_axis(convs[0])
        chains = [_chain(c, consumers, outputs, axis) for c in convs]
        common = 0
        while all(len(s) > common for _, s in chains) and len({s[common] for _, s in chains}) == 1:
            common += 1
        sizes = [c.shape[axis] for c in convs]
        m = _Siblings([nodes[:common + 1] for nodes, _ in chains], [int(v) for v in np.cumsum([0, *sizes[:-1]])])
        for b, (nodes, _) in enumerate(chains):
            merges[id(nodes[common])] = (m, b)

    def rule(n: Node, inputs: list[Node], ctx: RewriteContext) -> Node | None:
        if id(n) not in merges:
            return None  # a merged branch's inner nodes are left unread and drop out
        m, b = merges[id(n)]
        if m.wide is None:
            m.wide = _build_wide(m, ctx)
        axis = _channel_axis(m.chains[0][0])
        start = m.offsets[b]
        return op_node(n.name, "slice", [m.wide],
                       {"starts": (start,), "ends": (start + n.shape[axis],), "axes": (axis,)})

    out = rewrite(graph, rule)
    log.debug("sibling products: %s", "; ".join(
        "+".join(c[0].name for c in m.chains) for m in {id(m): m for m, _ in merges.values()}.values()))
    return out


def _concat_const(nodes: list[Node], axis: int, shapes: list[tuple], ctx: RewriteContext) -> Node:
    """The siblings' constants (each reshaped to `shapes[i]`) concatenated along `axis`."""
    v = np.concatenate([np.asarray(c.value).reshape(shape) for c, shape in zip(nodes, shapes)], axis=axis)
    return Node(fresh_name(ctx.names, f"{nodes[0].name}_siblings"), CONST, [], {}, tuple(v.shape), nodes[0].dtype,
                np.ascontiguousarray(v))


def _build_wide(m: _Siblings, ctx: RewriteContext) -> Node:
    convs = [c[0] for c in m.chains]
    first = convs[0]
    axis = _channel_axis(first)
    o = _out_axis(first)
    weight = _concat_const([c.inputs[1] for c in convs], o, [tuple(c.inputs[1].shape) for c in convs], ctx)
    y = op_node(fresh_name(ctx.names, f"{first.name}_siblings"), first.op, [ctx.new(first.inputs[0]), weight],
                dict(first.attrs))
    for j in range(1, len(m.chains[0])):
        steps = [c[j] for c in m.chains]
        prevs = [c[j - 1] for c in m.chains]
        s = steps[0]
        if len(s.inputs) == 1:
            y = op_node(fresh_name(ctx.names, f"{s.name}_siblings"), s.op, [y], dict(s.attrs))
            continue
        pos = s.inputs.index(prevs[0])
        consts = [st.inputs[1 - st.inputs.index(p)] for st, p in zip(steps, prevs)]
        if s.op == "bias_add":
            shapes, cat = [tuple(c.shape) for c in consts], 0
        else:  # per-channel operands, each broadcast along the channel axis to its branch's width
            shapes, cat = [_per_channel(c, p, axis) for c, p in zip(consts, prevs)], axis
            consts = [_broadcast(c, shape, axis, p.shape[axis]) for c, shape, p in zip(consts, shapes, prevs)]
            shapes = [tuple(c.shape) for c in consts]
        c = _concat_const(consts, cat, shapes, ctx)
        y = op_node(fresh_name(ctx.names, f"{s.name}_siblings"), s.op, [y, c] if pos == 0 else [c, y], dict(s.attrs))
    log.debug("%s: %d sibling %ss as one of %d channels", y.name, len(convs), first.op, y.shape[axis])
    return y


def _broadcast(c: Node, shape: tuple, axis: int, width: int) -> Node:
    """Constant `c` as `shape` with its channel axis `width` wide (a per-tensor value repeated)."""
    full = list(shape)
    full[axis] = width
    v = np.ascontiguousarray(np.broadcast_to(np.asarray(c.value).reshape(shape), full))
    return Node(c.name, CONST, [], {}, tuple(full), c.dtype, v)
