"""Attention as exporters write it, matmul(q, k^T) -> softmax(-1) -> matmul(., v), made one
`attention` op (ops/attention.py), as onnxruntime's attention fusion and TensorRT's MHA fusion do.

Why: three kernels write and read the [.., Lq, Lk] scores and probabilities through global
memory; one kernel keeps them on chip. Formed only where `supported` says the target has a
template for the op at that shape and dtype (the driver asks the schedule registry), so a
target without one keeps the three kernels it builds well. The product's folded scale
(graph/scales.py's `alpha`) becomes the op's. k^T given as a transpose of the last two axes is
read through (the op takes k as [.., Lk, D]); any other k^T gets a transpose, a view the
op's kernel reads in its loads. Scores changed between the product and the softmax (an additive
mask, as BERT's key mask; a causal `where`, as GPT-2's) are not matched: the op has no mask, so
those keep the three kernels.
"""
from __future__ import annotations

from typing import Callable

from ..ops.attention import AttentionGeometry
from .ir import Graph, Node, RewriteContext, fresh_name, op_node, rewrite

# (geometry, dtype) -> whether the target's templates build the fused op
Supported = Callable[[AttentionGeometry, str], bool]


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


def match_attention(ctx: Node, consumers) -> tuple[Node, Node, Node, float] | None:
    """(q, k^T, v, alpha) when ctx = matmul(softmax(matmul(q, k^T)), v), the intermediate
    scores and probabilities read by nothing else."""
    if not _plain_product(ctx) or ctx.attrs.get("alpha", 1.0) != 1.0:
        return None
    probs, v = ctx.inputs
    if (probs.op != "softmax" or probs.attrs.get("axis", -1) % len(probs.shape) != len(probs.shape) - 1
            or probs.attrs.get("valid")):
        return None
    scores = probs.inputs[0]
    if not _plain_product(scores) or len(consumers[scores]) != 1 or len(consumers[probs]) != 1:
        return None
    q, kt = scores.inputs
    alpha = float(scores.attrs.get("alpha", 1.0))
    if scores.dtype != v.dtype or v.shape[:-2] != q.shape[:-2] or alpha <= 0:
        return None
    return q, kt, v, alpha


def fuse_attention(graph: Graph, supported: Supported) -> Graph:
    """The graph with every matched attention that `supported` accepts as one op."""
    consumers = graph.consumers()
    found = {}  # id(context product) -> (q, k^T, alpha), nodes of the graph as given
    for n in graph.nodes:
        m = match_attention(n, consumers) if n.is_op else None
        if m is not None:
            q, kt, v, alpha = m
            geo = AttentionGeometry(1, q.shape[-2], kt.shape[-1], q.shape[-1], v.shape[-1], alpha)
            if supported(geo, q.dtype):
                found[id(n)] = (q, kt, alpha)
    if not found:
        return graph

    def rule(n: Node, inputs: list[Node], ctx: RewriteContext) -> Node | None:
        if id(n) not in found:
            return None
        q, kt, alpha = found[id(n)]
        q, kt, v = ctx.new(q), ctx.new(kt), inputs[1]  # the scores and softmax between: dropped
        if _swaps_last_two(kt):
            k = kt.inputs[0]
        else:
            rank = len(kt.shape)
            k = op_node(fresh_name(ctx.names, f"{n.name}_k"), "transpose", [kt],
                        {"axes": [*range(rank - 2), rank - 1, rank - 2]})
        return op_node(n.name, "attention", [q, k, v], {"alpha": alpha})

    return rewrite(graph, rule)
