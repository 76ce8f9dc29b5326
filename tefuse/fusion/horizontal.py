"""Which kernels share a launch (horizontal fusion): the rule, apart from how they are merged
(codegen/horizontal.py).

Kernels that do not depend on each other may run as one launch. The kernels of a graph are
given dependency levels (a kernel's level is one more than its producers' highest, 0 for one
that reads only graph inputs and constants), so kernels of one level never read each other's
outputs: the parallel branches of an Inception block, the per-tensor updates of an optimizer
step. Within a level, kernels with equal merge keys (same template, compile target and options,
block shape) that each launch at most `max_blocks` thread blocks share a launch, up to
`max_params` buffers a launch (the device's kernel-parameter space). The run order becomes
level by level, which keeps every kernel after its producers; with nothing to merge it is left
as it was.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Optional, Sequence


@dataclass(frozen=True)
class LaunchInfo:
    """What the rule needs of one scheduled kernel."""

    inputs: tuple  # the graph nodes it reads
    outputs: tuple  # the graph nodes it writes
    key: Optional[Hashable]  # kernels of equal keys may share a launch; None: it keeps its own
    blocks: int  # thread blocks it launches (0 on a CPU)
    params: int  # buffers it takes (inputs and outputs)


@dataclass(frozen=True)
class HorizontalRule:
    """max_blocks: a kernel launching more thread blocks keeps its own launch (None: no limit;
    a kernel of more than one wave is bound by its work, not by its launch). max_params: the
    buffers one launch may take."""

    max_blocks: Optional[int]
    max_params: int


def dependency_levels(kernels: Sequence[LaunchInfo]) -> list[int]:
    """Each kernel's level, kernels given in a run order (producers first)."""
    producer: dict[int, int] = {}
    levels: list[int] = []
    for i, k in enumerate(kernels):
        levels.append(1 + max((levels[producer[id(n)]] for n in k.inputs if id(n) in producer), default=-1))
        for o in k.outputs:
            producer[id(o)] = i
    return levels


def plan_launches(kernels: Sequence[LaunchInfo], rule: HorizontalRule) -> list[list[int]]:
    """The run order as launches, each a list of kernel indices (two or more: one merged launch).
    Without any merge, the kernels one a launch in their own order."""
    levels = dependency_levels(kernels)
    launches: list[list[int]] = []
    open_sets: dict[tuple, tuple[list[int], list[int]]] = {}  # (level, key) -> (members, [params])
    for i in sorted(range(len(kernels)), key=lambda j: (levels[j], j)):
        k = kernels[i]
        fits = k.key is not None and (rule.max_blocks is None or k.blocks <= rule.max_blocks)
        if not fits:
            launches.append([i])
            continue
        slot = (levels[i], k.key)
        members, params = open_sets.get(slot, (None, [0]))
        if members is None or params[0] + k.params > rule.max_params:
            members, params = [], [0]
            open_sets[slot] = (members, params)
            launches.append(members)
        members.append(i)
        params[0] += k.params
    if all(len(m) == 1 for m in launches):
        return [[i] for i in range(len(kernels))]
    return launches
