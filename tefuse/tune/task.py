"""Tuning tasks: one per unique workload among a graph's fused groups.

Groups with the same workload key compute the same kernel (ResNet repeats its blocks), so
they are tuned once and the record serves every copy; `weight` says how many copies there
are, which is what a whole-network time budget would be split by.
"""
from __future__ import annotations

import functools
import logging
from dataclasses import dataclass, field
from typing import Optional, Sequence

import tvm

from ..options import DEFAULT, BuildOptions
from ..schedules import DOMINANT, KernelInfo, Template, prologue_policy

from ..codegen.lower import LoweredGroup, lower_group
from ..codegen.schedule import find_template
from ..fusion import FusedGroup, ProloguePolicy, fuse_graph
from ..graph.ir import Graph
from ..target import TargetLike, make_target, target_key
from ..schedules.space import Config, ConfigSpace
from ..fusion.workload import structure_key, workload_key

log = logging.getLogger(__name__)


@dataclass
class Task:
    """A fused group to tune: its lowered func, KernelInfo, templates and their spaces."""

    workload: str
    group: FusedGroup
    lowered: LoweredGroup
    target: tvm.target.Target
    templates: list[Template]
    spaces: dict[str, ConfigSpace]
    weight: int = 1
    options: BuildOptions = DEFAULT  # what the templates' preferences and the records depend on
    # the other groups of its structure (extract_tasks): its records serve them, so whether it
    # is covered asks for each of them (tune.loop.has_record)
    members: list[FusedGroup] = field(default_factory=list)
    _script: Optional[str] = field(default=None, repr=False)
    _member_keys: Optional[set] = field(default=None, repr=False)  # workload keys of it and its members

    @property
    def func(self) -> tvm.tirx.PrimFunc:
        return self.lowered.func

    @property
    def info(self) -> KernelInfo:
        return self.lowered.info

    @property
    def target_key(self) -> str:
        return target_key(self.target)

    def stand_for(self, groups: Sequence[FusedGroup], weight: int) -> None:
        """Count `weight` more kernels for this task, `groups` (of its structure) among its
        members where their workload is not yet."""
        self.weight += weight
        if self._member_keys is None:  # each group's key computed once, however many it stands for
            self._member_keys = {self.workload, *(workload_key(m) for m in self.members)}
        for g in groups:
            key = workload_key(g)
            if key not in self._member_keys:
                self._member_keys.add(key)
                self.members.append(g)

    @functools.cached_property
    def structure(self) -> str:
        """The workload's structure key, written into its records (fusion.workload.structure_key)."""
        return structure_key(self.group)

    @property
    def name(self) -> str:
        return self.group.name

    def template(self, name: Optional[str] = None) -> Template:
        if name is None:
            return self.templates[0]
        for t in self.templates:
            if t.name == name:
                return t
        raise KeyError(f"task {self.name}: no template {name!r} (have {[t.name for t in self.templates]})")

    def space(self, template: Optional[str] = None) -> ConfigSpace:
        return self.spaces[self.template(template).name]

    def fallback(self, template: Optional[str] = None) -> Config:
        t = self.template(template)
        return t.fallback(self.info, self.target, self.spaces[t.name])

    def func_script(self) -> str:
        """TVMScript of the unscheduled func: how it travels to build workers.

        (tvm.ir.save_json / pickle of these te-made PrimFuncs segfaults in TVM 0.27; the
        script round-trips and keeps the block names the templates look up.)
        """
        if self._script is None:
            self._script = self.func.script()
        return self._script

    def flops(self) -> float:
        """Floating-point operations of one call (TVM's estimate; 0 when it cannot tell): what
        the budget scheduler compares similar kernels' throughputs by."""
        try:
            from tvm.s_tir.analysis import estimate_tir_flops

            return float(estimate_tir_flops(tvm.IRModule({"main": self.func})))
        except Exception:  # noqa: BLE001 - an op TVM's estimator does not know
            return 0.0

    def tunable(self) -> list[Template]:
        """The templates tuning gives trials: those that say they build this op on this target
        (`supports`: flash attention on sm_75 would spend every trial failing to compile); among
        them, where one computes on units the others do not use (preference >= DOMINANT: tensor
        cores), only such templates: the CUDA-core conv templates took most of an fp16 conv's
        trials on the H100 at 5-100x its time."""
        info = self.lowered.info
        able = [t for t in self.templates if t.supports(info.geometry, info.dtype, self.target)]
        able = able or list(self.templates)
        dominant = [t for t in able if t.preference(info, self.target, self.options) >= DOMINANT]
        return dominant or able

    def describe(self) -> str:
        sizes = ", ".join(f"{n}: {len(s)}" for n, s in self.spaces.items())
        return f"{self.workload} (x{self.weight}; {sizes})"


def task_from_group(group: FusedGroup, target: TargetLike, options: BuildOptions = DEFAULT) -> Task:
    tgt = make_target(target)
    lowered = lower_group(group)
    templates = find_template(tgt, lowered.info.anchor_kind, info=lowered.info, options=options)
    spaces = {t.name: t.space(lowered.info, tgt) for t in templates}
    return Task(workload_key(group), group, lowered, tgt, templates, spaces, options=options)


def extract_tasks(graph: Graph, target: TargetLike, *, prologue: ProloguePolicy = True,
                  multi_output: bool = True, options: BuildOptions = DEFAULT) -> list[Task]:
    """One task per workload structure among the graph's fused groups (fusion.workload.
    structure_key: groups that differ only in their folded constants, such as a quantized
    model's per-layer scales, share one: its records serve them all), in graph order, weighted
    by how many groups it stands for."""
    tgt = make_target(target)
    tasks: dict[str, Task] = {}
    for g in fuse_graph(graph, prologue=prologue_policy(tgt, prologue), multi_output=multi_output):
        key = structure_key(g)
        if key in tasks:
            tasks[key].stand_for([g], 1)
            continue
        tasks[key] = task_from_group(g, tgt, options)
    out = list(tasks.values())
    log.info("extracted %d tuning task(s) for %s", len(out), target_key(tgt))
    return out


def as_tasks(graph_or_tasks, target: TargetLike, options: BuildOptions = DEFAULT) -> list[Task]:
    if isinstance(graph_or_tasks, Graph):
        return extract_tasks(graph_or_tasks, target, options=options)
    if isinstance(graph_or_tasks, Task):
        return [graph_or_tasks]
    tasks: Sequence = list(graph_or_tasks)
    if not all(isinstance(t, Task) for t in tasks):
        raise TypeError("tune() takes a Graph, a Task or a list of Tasks")
    return list(tasks)
