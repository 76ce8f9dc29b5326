"""Attention as exporters write it, matmul(q, k^T) -> softmax(-1) -> matmul(., v), made one
`attention` op (ops/attention.py), as onnxruntime's attention fusion and TensorRT's MHA fusion do.

Why: three kernels write and read the [.., Lq, Lk] scores and probabilities through global
memory; one kernel keeps them on chip. Formed only where `supported` says the target has a
template for the op at that shape and dtype (the driver asks the schedule registry), so a
target without one keeps the three kernels it builds well; and only over fixed shapes (the
templates size tiles and grids from them; a dynamic build keeps the three kernels). The product's folded scale
(graph/scales.py's `alpha`) becomes the op's. k^T given as a transpose of the last two axes is
read through (the op takes k as [.., Lk, D]); any other k^T gets a transpose, a view the
op's kernel reads in its loads.

Between the product and the softmax the scores may be scaled by a scalar (folded into alpha)
and given an additive bias, as `transformers` writes BERT's key mask and GPT-2's causal mask:
matmul -> [mul c] -> [cast float32] -> add(mask) -> [clip] -> [cast] -> softmax, the casts and
the clip being an fp16 graph's (graph/precision.py saturates the masked scores to fp16's
range). Swin adds a relative-position bias, then views the scores as [batch, windows, ..] to add
its shifted windows' mask and views them back: a term added under such a view of the first dim
is expanded over it and viewed back. The terms, summed, become the op's fourth input and the
clip its `clip`; the bias's own computation (the mask's where, Swin's sum) is left to the fusion
pass, which computes it where the op's kernel copies it or once for every layer. A scalar is
taken below the adds only (above them it would scale the bias too). Each node of the chain
must be read by the next alone.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable, Optional

from ..ops.attention import AttentionGeometry, bias_broadcasts, bias_rows
from ..ops.value import broadcast_shape
from .dims import is_static
from .ir import Graph, Node, RewriteContext, fresh_name, op_node, rewrite
from .scales import unscaled

# (geometry, dtype) -> whether the target's templates build the fused op
Supported = Callable[[AttentionGeometry, str], bool]
FLOATS = ("float32", "float16", "bfloat16")


@dataclass(frozen=True)
class BiasTerm:
    """One additive term of the scores: `node`, added where the scores' first dim is split in
    two (`split`, Swin's windows viewed as [batch, windows, ..] for the shifted-window mask) or
    not (None)."""

    node: Node
    split: Optional[tuple[int, int]] = None
    rank: int = 0  # a split term's: the rank of the split scores it is added to

    def full_shape(self) -> tuple[int, ...]:
        """A split term's shape right-aligned to the split scores' rank."""
        return (1,) * (self.rank - len(self.node.shape)) + tuple(self.node.shape)

    def shape(self) -> tuple[int, ...]:
        """The term's shape over the unsplit scores (a split term's first two dims merged)."""
        if self.split is None:
            return tuple(self.node.shape)
        return (self.split[0] * self.split[1], *self.full_shape()[2:])


@dataclass(frozen=True)
class AttentionMatch:
    """ctx = matmul(softmax(alpha * q @ k^T [+ the bias terms, clamped to +-clip]), v); `scores`
    is the product q @ k^T, `probs` the softmax, `chain` the nodes between them."""

    q: Node
    kt: Node
    v: Node
    alpha: float
    scores: Node
    probs: Node
    chain: tuple[Node, ...] = ()
    biases: tuple[BiasTerm, ...] = ()
    clip: float = 0.0

    def bias_shape(self) -> Optional[tuple[int, ...]]:
        return broadcast_shape([t.shape() for t in self.biases], "attention bias terms") if self.biases else None

    def geometry(self) -> AttentionGeometry:
        lq, shape = self.q.shape[-2], self.bias_shape()
        return AttentionGeometry(1, lq, self.kt.shape[-1], self.q.shape[-1], self.v.shape[-1], self.alpha,
                                 bias_rows(shape, lq) if shape is not None else 0, self.clip)


def _plain_product(n: Node) -> bool:
    """A batched matmul of two computed [.., M, K] @ [.., K, N] operands, same batch dims."""
    if n.op != "matmul" or set(n.attrs) - {"alpha"} or len(n.inputs) != 2:
        return False
    a, b = n.inputs
    return (a.is_op and b.is_op and len(a.shape) >= 3 and len(a.shape) == len(b.shape)
            and a.shape[:-2] == b.shape[:-2] and a.dtype == b.dtype == n.dtype)


def _swaps_last_two(n: Node) -> bool:
    axes = n.attrs.get("axes")
    rank = len(n.shape)
    return (n.op == "transpose" and axes is not None
            and tuple(a % rank for a in axes) == (*range(rank - 2), rank - 1, rank - 2))


def _float_cast(n: Node) -> bool:
    return n.op == "cast" and len(n.inputs) == 1 and n.dtype in FLOATS and n.inputs[0].dtype in FLOATS


def _symmetric_clip(n: Node) -> float:
    """c where n = clip(x, -c, c) for c > 0, else 0."""
    lo, hi = n.attrs.get("min"), n.attrs.get("max")
    if n.op != "clip" or len(n.inputs) != 1 or lo is None or hi is None:
        return 0.0
    return float(hi) if math.isfinite(float(hi)) and float(hi) > 0 and float(lo) == -float(hi) else 0.0


def _bias_fits(bias: Node, scores_shape: tuple) -> bool:
    """A bias the op takes: a float tensor broadcast to the scores, one column a key."""
    return (bias.dtype in FLOATS and len(bias.shape) >= 1 and bias.shape[-1] == scores_shape[-1]
            and bias_broadcasts(bias.shape, scores_shape))


@dataclass(frozen=True)
class _Walk:
    """Where `_logits` is on its way from the softmax down to the product."""

    chain: tuple[Node, ...] = ()
    biases: tuple[BiasTerm, ...] = ()
    clip: float = 0.0
    split: Optional[tuple[int, int]] = None
    scaled: bool = False  # a scalar was peeled: an add below it would have been scaled too


def _splits_first_dim(inner: tuple, outer: tuple) -> bool:
    return len(inner) == len(outer) + 1 and inner[0] * inner[1] == outer[0] and inner[2:] == outer[1:]


def _logits(x: Node, consumers, scores_shape: tuple, w: _Walk = _Walk()):
    """(product, factor, walk) where the softmax's input x is the product q @ k^T through the
    chain of the module docstring (with Swin's reshapes that view the scores' first dim as
    [batch, windows] around an add); None where x is anything else."""
    if w.chain and not (len(consumers[x]) == 1 and consumers[x][0] is w.chain[-1]):
        return None
    on = replace(w, chain=(*w.chain, x))
    if _float_cast(x):
        return _logits(x.inputs[0], consumers, scores_shape, on)
    clip = _symmetric_clip(x)
    if clip and not w.biases and not w.clip and not w.scaled:
        return _logits(x.inputs[0], consumers, scores_shape, replace(on, clip=clip))
    if x.op == "reshape" and not w.scaled:
        y = x.inputs[0]
        if w.split is None and x.shape == scores_shape and _splits_first_dim(y.shape, scores_shape):
            return _logits(y, consumers, scores_shape, replace(on, split=tuple(y.shape[:2])))
        if w.split is not None and y.shape == scores_shape and tuple(x.shape[:2]) == w.split:
            return _logits(y, consumers, scores_shape, replace(on, split=None))
        return None
    if x.op == "add" and len(x.inputs) == 2 and not w.scaled:
        for y, b in (x.inputs, reversed(x.inputs)):
            if y.shape == x.shape and _bias_fits(b, x.shape):
                found = _logits(y, consumers, scores_shape, replace(on, biases=(*w.biases, BiasTerm(b, w.split, len(x.shape)))))
                if found is not None:
                    return found
        return None
    y, factor = unscaled(x)
    if y is not x and factor > 0 and w.split is None:
        found = _logits(y, consumers, scores_shape, replace(on, scaled=True))
        return None if found is None else (found[0], found[1] * factor, found[2])
    if _plain_product(x) and w.split is None and tuple(x.shape) == scores_shape and (w.biases or not w.clip):
        return x, 1.0, w  # (a clip with no bias to clamp is not the pattern)
    return None


def match_attention(ctx: Node, consumers) -> Optional[AttentionMatch]:
    """The attention ctx computes, ctx = matmul(softmax(...), v) over the scores chain of the
    module docstring, the scores, chain and probabilities read by nothing else; else None."""
    if not _plain_product(ctx) or ctx.attrs.get("alpha", 1.0) != 1.0:
        return None
    probs, v = ctx.inputs
    if (probs.op != "softmax" or probs.attrs.get("axis", -1) % len(probs.shape) != len(probs.shape) - 1
            or probs.attrs.get("valid") or len(consumers[probs]) != 1):
        return None
    if len(consumers[probs.inputs[0]]) != 1:
        return None
    found = _logits(probs.inputs[0], consumers, tuple(probs.shape))
    if found is None:
        return None
    scores, factor, walk = found
    q, kt = scores.inputs
    alpha = float(scores.attrs.get("alpha", 1.0)) * factor
    if not scores.dtype == probs.dtype == v.dtype or v.shape[:-2] != q.shape[:-2] or alpha <= 0:
        return None
    if not all(is_static(x.shape) for x in (q, kt, v, *(t.node for t in walk.biases))):
        return None  # the templates size their tiles and grids from fixed shapes
    return AttentionMatch(q, kt, v, alpha, scores, probs, walk.chain, walk.biases, walk.clip)


def fuse_attention(graph: Graph, supported: Supported) -> Graph:
    """The graph with every matched attention that `supported` accepts as one op."""
    consumers = graph.consumers()
    outputs = {id(o) for o in graph.outputs}
    found = {}  # id(context product) -> its match, nodes of the graph as given
    for n in graph.nodes:
        m = match_attention(n, consumers) if n.is_op else None
        seen = m is not None and any(id(x) in outputs for x in (m.scores, m.probs, *m.chain))  # computed anyway
        if m is not None and not seen and supported(m.geometry(), m.q.dtype):
            found[id(n)] = m
    if not found:
        return graph

    def rule(n: Node, inputs: list[Node], ctx: RewriteContext) -> Node | None:
        if id(n) not in found:
            return None
        m = found[id(n)]
        q, kt, v = ctx.new(m.q), ctx.new(m.kt), inputs[1]  # the scores, chain and softmax between: dropped
        if _swaps_last_two(kt):
            k = kt.inputs[0]
        else:
            rank = len(kt.shape)
            k = op_node(fresh_name(ctx.names, f"{n.name}_k"), "transpose", [kt],
                        {"axes": [*range(rank - 2), rank - 1, rank - 2]})
        if not m.biases:
            return op_node(n.name, "attention", [q, k, v], {"alpha": m.alpha})
        return op_node(n.name, "attention", [q, k, v, _bias(m, n.name, ctx)], {"alpha": m.alpha, "clip": m.clip})

    return rewrite(graph, rule)


def _bias(m: AttentionMatch, name: str, ctx: RewriteContext) -> Node:
    """The match's bias terms as one node over the scores: a split term expanded over its split
    dims and its first two merged (a view the attention kernel computes in its copy), the terms
    added (in float32 where their dtypes differ)."""
    terms = []
    for t in m.biases:
        b = ctx.new(t.node)
        if t.split is not None:
            shape, full = t.shape(), t.full_shape()
            if tuple(b.shape) != full:
                b = op_node(fresh_name(ctx.names, f"{name}_bias"), "reshape", [b], {"shape": full})
            b = op_node(fresh_name(ctx.names, f"{name}_bias"), "expand", [b], {"shape": (*t.split, *full[2:])})
            b = op_node(fresh_name(ctx.names, f"{name}_bias"), "reshape", [b], {"shape": shape})
        terms.append(b)
    if len({t.dtype for t in terms}) > 1:
        terms = [t if t.dtype == "float32" else op_node(fresh_name(ctx.names, f"{name}_bias"), "cast", [t],
                                                         {"dtype": "float32"}) for t in terms]
    total = terms[0]
    for t in terms[1:]:
        total = op_node(fresh_name(ctx.names, f"{name}_bias"), "add", [total, t], {})
    return total
