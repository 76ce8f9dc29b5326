"""Post-dominator tree over a graph's op nodes, as Relay's FuseOps builds it.

Each node's parent is the least common ancestor of its consumers; `pattern` is the most
general op pattern met on the way there. Graph outputs have no parent: their value must
reach memory, so nothing can swallow them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..graph.ir import Graph, Node
from ..ops import OpPattern
from ..ops.value import same_dim


def edge_pattern(producer: Node, consumer: Node) -> OpPattern:
    """The consumer's pattern, but a broadcast that reads this input at full shape is elementwise
    (symbolic dims compared as expressions: two computations of N * 77 are one size)."""
    p = consumer.pattern
    if p == OpPattern.BROADCAST and same_shape(producer.shape, consumer.shape):
        return OpPattern.ELEMWISE
    return p


def same_shape(a, b) -> bool:
    return len(a) == len(b) and all(same_dim(x, y) for x, y in zip(a, b))


@dataclass(eq=False)
class DomNode:
    node: Node
    parent: Optional["DomNode"]
    depth: int
    pattern: OpPattern


def _lca(a: Optional[DomNode], b: Optional[DomNode], pat: list) -> Optional[DomNode]:
    while a is not b:
        if a is None or b is None:
            return None
        if a.depth < b.depth:
            pat[0] = max(pat[0], b.pattern)
            b = b.parent
        elif b.depth < a.depth:
            pat[0] = max(pat[0], a.pattern)
            a = a.parent
        else:
            pat[0] = max(pat[0], a.pattern, b.pattern)
            a, b = a.parent, b.parent
    return a


def post_dominator_tree(graph: Graph, ops: list[Node], consumers: dict[Node, list[Node]]) -> dict[Node, DomNode]:
    outputs = set(map(id, graph.outputs))
    tree: dict[Node, DomNode] = {}
    for n in reversed(ops):
        if id(n) in outputs or not consumers[n]:
            tree[n] = DomNode(n, None, 1, OpPattern.OPAQUE)
            continue
        pat = [OpPattern.ELEMWISE]
        parent: Optional[DomNode] = None
        for k, c in enumerate(consumers[n]):
            pat[0] = max(pat[0], edge_pattern(n, c))
            parent = tree[c] if k == 0 else _lca(parent, tree[c], pat)
        tree[n] = DomNode(n, parent, parent.depth + 1 if parent else 1, pat[0])
    return tree
