"""Shared views cloned per consumer: a reshape/transpose/squeeze/slice chain read by several
consumers becomes one private chain each, so each fuses into its consumer's reads.

Why: torch's MultiheadAttention splits the in-projection's output with
unflatten -> unsqueeze -> transpose -> squeeze, then takes q, k and v from it. Fusion groups
never duplicate a node, so that shared chain was a kernel of its own, copying the projection's
whole output once more (ViT-B/16 b32: 0.3 ms of 6.3). A view moves indices and computes nothing,
so each consumer reading through its own copy costs no arithmetic and no extra traffic; as
operand prologues the copies are index arithmetic in the GEMMs' tile loads.
Only chains whose every consumer is a view too are cloned (attention's slices), so a view read
by several elementwise kernels stays one materialised copy.
"""
from __future__ import annotations

from .ir import Graph, Node, fresh_name

VIEW_OPS = ("reshape", "transpose", "squeeze", "expand_dims", "flatten", "slice")


def _clonable(n: Node, consumers: dict, outputs: set) -> bool:
    cs = consumers[n]
    return (n.op in VIEW_OPS and len(cs) > 1 and id(n) not in outputs
            and all(c.op in VIEW_OPS for c in cs))


def clone_shared_views(graph: Graph) -> Graph:
    consumers = graph.consumers()
    outputs = set(map(id, graph.outputs))
    if not any(_clonable(n, consumers, outputs) for n in graph.nodes):
        return graph
    names = {n.name for n in graph.nodes}
    new: dict[int, Node] = {}

    def chain_copy(v: Node) -> Node:
        """A private copy of the view chain ending at v (already rewritten), up to the first
        node that is not a view."""
        if v.op not in VIEW_OPS:
            return v
        return Node(fresh_name(names, v.name), v.op, [chain_copy(v.inputs[0]), *v.inputs[1:]],
                    dict(v.attrs), v.shape, v.dtype)

    shared = {id(n) for n in graph.nodes if _clonable(n, consumers, outputs)}
    for n in graph.nodes:
        if not n.is_op:
            new[id(n)] = n
            continue
        inputs = []
        for i in n.inputs:
            got = new[id(i)]
            if id(i) in shared:  # this consumer reads its own copy of the whole view chain
                got = chain_copy(got)
            inputs.append(got)
        new[id(n)] = Node(n.name, n.op, inputs, n.attrs, n.shape, n.dtype)
    return Graph(list(graph.inputs), [new[id(o)] for o in graph.outputs])
