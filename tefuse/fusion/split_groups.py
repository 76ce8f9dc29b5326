"""A fused conv or Linear group cut into a split-K pair: the product's partial sums over slices of
its reduction (one group, the anchor alone) and their split_sum with the group's epilogue (the
other), as graph/split_k.py would have left the graph.

Why: a dynamic build decides the graph's split-K once, at the ranges' opt, where the grid is
full; a size bucket far below it (batch 1 of 1:32:64) has the few tiles split-K is for. Its
variant of such a group is this pair (driver.prepare_variants), so one build splits where the
exact build at that size would.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

from ..graph.ir import Node
from ..graph.split_k import split_node
from .fuse_ops import FusedGroup


def split_group(group: FusedGroup, splits: int) -> Optional[tuple[FusedGroup, FusedGroup]]:
    """(partials, total) of `group` with its anchor in `splits` slices; None where the group is
    not one product over values read from outside and its epilogue (a prologue computed in the
    kernel stays with an unsplit product)."""
    anchor = group.anchor
    if anchor is None or group.prologue or any(i not in group.inputs for i in anchor.inputs):
        return None
    names = {n.name for n in [*group.inputs, *group.nodes]}
    summed = split_node(anchor, anchor.inputs, splits, names)
    partial = summed.inputs[0]
    new: dict[Node, Node] = {anchor: summed}
    rest = []
    for n in group.nodes:
        if n is not anchor:
            new[n] = replace(n, inputs=[new.get(i, i) for i in n.inputs])
            rest.append(new[n])
    read = {i for n in rest for i in n.inputs}
    first = FusedGroup(group.index, [partial], list(dict.fromkeys(anchor.inputs)), [partial], partial.pattern,
                       anchor=partial)
    total = FusedGroup(group.index, [summed, *rest], [partial, *(i for i in group.inputs if i in read)],
                       [new[o] for o in group.outputs], max(n.pattern for n in [summed, *rest]), anchor=summed)
    return first, total
