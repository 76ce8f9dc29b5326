"""Build: graph -> fused groups -> one compiled kernel per group."""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Optional, Union

import tvm

from ..errors import BuildError
from ..fusion import FusedGroup, fuse_graph
from ..graph.ir import Graph, Node
from ..target import TargetLike, make_target
from ..tune.workload import workload_key
from .lower import LoweredGroup, lower_group
from .schedule import BestRecordSource, ScheduleChoice, apply_schedule, choose_schedule

log = logging.getLogger(__name__)


@dataclass
class CompiledKernel:
    """One fused group, compiled: call it with input then output tensors."""

    group: FusedGroup
    params: list[Node]
    outputs: list[Node]
    module: tvm.runtime.Module
    tir: str
    workload: str
    template: str
    config_index: int
    config_source: str
    build_seconds: float
    from_cache: bool = False

    def __call__(self, *args) -> None:
        self.module["main"](*args)

    def source(self, kind: str = "cuda") -> str:
        """Generated device source ('cuda'), host/LLVM IR ('llvm') or lowered TIR ('tir')."""
        if kind == "tir":
            return self.tir
        mods = [self.module, *getattr(self.module, "imports", [])]
        for m in mods:
            if kind in ("cuda", "rocm") and m.kind == kind:
                return m.inspect_source()
            if kind in ("llvm", "asm") and m.kind == "llvm":
                return m.inspect_source("asm" if kind == "asm" else "ll")
        raise BuildError(f"kernel {self.group.name} has no {kind!r} source (modules: {[m.kind for m in mods]})")


def compile_mod(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.runtime.Module:
    with target:
        return tvm.compile(mod, target=target).mod


def build_group(group: FusedGroup, target: tvm.target.Target, db: Optional[BestRecordSource] = None,
                choice: Optional[ScheduleChoice] = None, cache=None) -> CompiledKernel:
    t0 = time.perf_counter()
    lowered: LoweredGroup = lower_group(group)
    choice = choice or choose_schedule(lowered, target, db)
    mod = apply_schedule(lowered, target, choice)
    key = workload_key(group)
    module, hit = None, False
    if cache is not None:
        module = cache.load(key, target, choice)
        hit = module is not None
    if module is None:
        try:
            module = compile_mod(mod, target)
        except Exception as e:  # noqa: BLE001 - TVM raises many kinds; name the group
            msg = str(e).strip().splitlines()
            raise BuildError(f"group {group.name}: compiling for {target.kind.name} failed: "
                             f"{msg[-1] if msg else type(e).__name__}") from e
        if cache is not None:
            cache.store(key, target, choice, module)
    return CompiledKernel(group, lowered.params, group.outputs, module, mod.script(), key,
                          choice.template.name, choice.config.index, choice.source,
                          time.perf_counter() - t0, hit)


def build(graph: Graph, target: TargetLike = "llvm", *, db: Union[BestRecordSource, str, None] = None,
          cache=None, fuse: bool = True, prologue: bool = True, multi_output: bool = True,
          fold_bn: bool = False):
    """Fuse and compile a graph; returns a `CompiledGraph` ready to run.

    fold_bn folds constant inference batch-norms into the preceding conv's weights first.
    db / cache: None (off, the default: builds stay hermetic), an object, or "default" for
    the user + shipped tuning logs / the on-disk kernel cache (what the CLI passes).
    """
    from ..graph.fold_bn import fold_batch_norm
    from ..runtime.executor import CompiledGraph

    if fold_bn:
        graph = fold_batch_norm(graph)
    if db == "default":
        from ..tune.database import default_database
        db = default_database()
    if cache == "default":
        from .cache import default_cache
        cache = default_cache()
    tgt = make_target(target)
    groups = fuse_graph(graph, fuse=fuse, prologue=prologue, multi_output=multi_output)
    kernels = []
    t0 = time.perf_counter()
    for k, g in enumerate(groups):
        kernels.append(build_group(g, tgt, db=db, cache=cache))
        log.info("[%d/%d] built %s (%s, %.2fs%s)", k + 1, len(groups), g.name, kernels[-1].template,
                 kernels[-1].build_seconds, ", cached" if kernels[-1].from_cache else "")
    log.info("built %d kernels for %d ops in %.1fs", len(kernels),
             sum(len(g.nodes) for g in groups), time.perf_counter() - t0)
    return CompiledGraph(graph, tgt, kernels)
