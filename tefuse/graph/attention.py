"""Attention as exporters write it, matmul(q, k^T) -> softmax(-1) -> matmul(., v), made one
`attention` op (ops/attention.py), as onnxruntime's attention fusion and TensorRT's MHA fusion do.

Why: three kernels write and read the [.., Lq, Lk] scores and probabilities through global
memory; one kernel keeps them on chip. Formed only where `supported` says the target has a
template for the op at that shape and dtype (the driver asks the schedule registry), so a
target without one keeps the three kernels it builds well. The product's folded scale
(graph/scales.py's `alpha`) becomes the op's. k^T given as a transpose of the last two axes is
read through (the op takes k as [.., Lk, D]); any other k^T gets a transpose, a view the
op's kernel reads in its loads.

Between the product and the softmax the scores may be scaled by a scalar (folded into alpha)
and given an additive bias, as `transformers` writes BERT's key mask and GPT-2's causal mask:
matmul -> [mul c] -> [cast float32] -> add(mask) -> [clip] -> [cast] -> softmax, the casts and
the clip being an fp16 graph's (graph/precision.py saturates the masked scores to fp16's
range). The bias becomes the op's fourth input and the clip its `clip`; the mask's own
computation (where, and) is left to the fusion pass, which computes it where the op's kernel
copies it. Each node of the chain must be read by the next alone.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from ..ops.attention import AttentionGeometry, bias_rows
from .ir import Graph, Node, RewriteContext, fresh_name, op_node, rewrite
from .scales import unscaled

# (geometry, dtype) -> whether the target's templates build the fused op
Supported = Callable[[AttentionGeometry, str], bool]
FLOATS = ("float32", "float16", "bfloat16")


@dataclass(frozen=True)
class AttentionMatch:
    """ctx = matmul(softmax(alpha * q @ k^T [+ bias, clamped to +-clip]), v); `scores` is the
    product q @ k^T, `probs` the softmax, `chain` the nodes between them."""

    q: Node
    kt: Node
    v: Node
    alpha: float
    scores: Node
    probs: Node
    chain: tuple[Node, ...] = ()
    bias: Optional[Node] = None
    clip: float = 0.0

    def geometry(self) -> AttentionGeometry:
        lq = self.q.shape[-2]
        return AttentionGeometry(1, lq, self.kt.shape[-1], self.q.shape[-1], self.v.shape[-1], self.alpha,
                                 bias_rows(self.bias.shape, lq) if self.bias is not None else 0, self.clip)


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
    return float(hi) if float(hi) > 0 and float(lo) == -float(hi) else 0.0


def _bias_fits(bias: Node, scores_shape: tuple) -> bool:
    """A bias the op takes: a float tensor broadcast to the scores, one column a key."""
    shape = tuple(bias.shape)
    return (bias.dtype in FLOATS and 1 <= len(shape) <= len(scores_shape) and shape[-1] == scores_shape[-1]
            and all(b in (1, s) for b, s in zip(reversed(shape), reversed(scores_shape))))


def _logits(x: Node, consumers) -> Optional[tuple[Node, float, tuple, Optional[Node], float]]:
    """(product, factor, chain, bias, clip) where the softmax's input x is the product q @ k^T
    through the chain the module docstring names; None where x is anything else."""
    chain, bias, clip = [], None, 0.0

    def step(n: Node) -> Node:
        chain.append(n)
        return n.inputs[0]

    def only_reader(n: Node, reader: Node) -> bool:
        return len(consumers[n]) == 1 and consumers[n][0] is reader

    if _float_cast(x):
        x = step(x)
    if _symmetric_clip(x) and only_reader(x.inputs[0], x):
        clip = _symmetric_clip(x)
        x = step(x)
    if x.op == "add" and len(x.inputs) == 2 and (not chain or only_reader(x, chain[-1])):
        for y, b in (x.inputs, reversed(x.inputs)):
            if y.shape == x.shape and _bias_fits(b, x.shape) and only_reader(y, x):
                chain.append(x)
                x, bias = y, b
                break
        else:
            return None
    elif clip:  # a clip with no bias: not the pattern
        return None
    if _float_cast(x) and (not chain or only_reader(x, chain[-1])):
        x = step(x)
    y, factor = unscaled(x)
    if y is not x:
        if chain and not only_reader(x, chain[-1]) or factor <= 0:
            return None
        chain.append(x)
        x = y
    if not _plain_product(x) or (chain and not only_reader(x, chain[-1])):
        return None
    return x, factor, tuple(chain), bias, clip


def match_attention(ctx: Node, consumers) -> Optional[AttentionMatch]:
    """The attention ctx computes, ctx = matmul(softmax(...), v) over the scores chain of the
    module docstring, the scores, chain and probabilities read by nothing else; else None."""
    if not _plain_product(ctx) or ctx.attrs.get("alpha", 1.0) != 1.0:
        return None
    probs, v = ctx.inputs
    if (probs.op != "softmax" or probs.attrs.get("axis", -1) % len(probs.shape) != len(probs.shape) - 1
            or probs.attrs.get("valid") or len(consumers[probs]) != 1):
        return None
    found = _logits(probs.inputs[0], consumers)
    if found is None:
        return None
    scores, factor, chain, bias, clip = found
    if len(consumers[scores]) != 1 or len(consumers[probs.inputs[0]]) != 1:
        return None
    q, kt = scores.inputs
    alpha = float(scores.attrs.get("alpha", 1.0)) * factor
    if not scores.dtype == probs.dtype == v.dtype or v.shape[:-2] != q.shape[:-2] or alpha <= 0:
        return None
    return AttentionMatch(q, kt, v, alpha, scores, probs, chain, bias, clip)


def fuse_attention(graph: Graph, supported: Supported) -> Graph:
    """The graph with every matched attention that `supported` accepts as one op."""
    consumers = graph.consumers()
    found = {}  # id(context product) -> its match, nodes of the graph as given
    for n in graph.nodes:
        m = match_attention(n, consumers) if n.is_op else None
        if m is not None and supported(m.geometry(), m.q.dtype):
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
        if m.bias is None:
            return op_node(n.name, "attention", [q, k, v], {"alpha": m.alpha})
        return op_node(n.name, "attention", [q, k, v, ctx.new(m.bias)], {"alpha": m.alpha, "clip": m.clip})

    return rewrite(graph, rule)
