"""Attention's key axis padded to whole 16-byte vectors where it stays three kernels
(matmul(q, k^T) -> softmax -> matmul(., v), graph/attention.py's pattern, not fused).

Why: ViT's 197 tokens make every [.., Lq, 197] score and probability row start at an odd
element, so the scores product stores them two bytes at a time and the context product loads
them the same way (cp.async moves only aligned 16-byte chunks). With k^T padded by zero
columns to 200 keys, the scores rows are 400 bytes; the softmax takes only the first 197
(`valid`) and writes zeros after them; v gets the matching zero rows, so the context product
adds nothing for them. Both pads are read in the products' operand loads (prologues), no kernel
is added, and the result is the same to the bit: the padding contributes exact zeros.
"""
from __future__ import annotations

from .attention import match_attention
from .ir import Graph, Node, RewriteContext, op_node, pad_after, rewrite
from .weights import TENSOR_CORE_DTYPES, vector_lanes


def pad_attention_keys(graph: Graph) -> Graph:
    """The graph with each unfused tensor-core attention's keys padded to a multiple of 16 bytes
    (see the module docstring); others, and those already aligned, unchanged."""
    consumers = graph.consumers()
    outputs = {id(o) for o in graph.outputs}
    plans = {}  # id(node) -> its part: ("scores", pad) / ("probs", keys) / ("context", pad)
    for n in graph.nodes:
        m = match_attention(n, consumers) if n.is_op else None
        if m is None:
            continue
        keys, lanes = m.kt.shape[-1], vector_lanes(m.q.dtype)
        probs, scores = m.probs, m.scores
        if (m.chain or m.q.dtype not in TENSOR_CORE_DTYPES or keys % lanes == 0  # scores read as the product wrote them
                or id(scores) in outputs or id(probs) in outputs  # the padded widths would be seen
                or any(id(x) in plans for x in (scores, probs, n))):  # one attention's context, another's scores
            continue
        extra = -keys % lanes
        plans[id(scores)] = ("scores", extra)
        plans[id(probs)] = ("probs", keys)
        plans[id(n)] = ("context", extra)
    if not plans:
        return graph

    def rule(n: Node, inputs: list[Node], ctx: RewriteContext) -> Node | None:
        part = plans.get(id(n))
        if part is None:
            return None
        kind, value = part
        if kind == "scores":  # k^T [.., D, Lk] gets zero columns: the padded scores are 0
            a, kt = inputs
            return op_node(n.name, n.op, [a, pad_after(kt, -1, value, ctx.names)], n.attrs)
        if kind == "probs":
            return op_node(n.name, n.op, inputs, {**n.attrs, "valid": value})
        p, v = inputs  # v [.., Lk, Dv] gets zero rows against the zero probabilities
        return op_node(n.name, n.op, [p, pad_after(v, -2, value, ctx.names)], n.attrs)

    return rewrite(graph, rule)
