"""Builder: apply configs and compile candidates in parallel worker processes.

Workers are spawned (not forked: a forked TVM thread pool can deadlock) and kept for the
whole tuning run, so TVM is imported once per worker. A build that hangs past its timeout
takes its pool down with it (the workers are killed and a fresh pool starts); every failure
becomes a BuildResult with an error kind, never an exception.
"""
from __future__ import annotations

import concurrent.futures as cf
import logging
import multiprocessing as mp
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from typing import Optional, Sequence

from schedules.registry import KernelInfo

from .measure import COMPILE_ERROR, TIMEOUT, BuildResult, _last_line
from .space import Config
from .task import Task

log = logging.getLogger(__name__)


@dataclass
class BuildInput:
    key: str
    script: str
    info: KernelInfo
    template: str
    target: dict
    index: int
    values: dict
    out_path: str


_FUNCS: dict[str, object] = {}  # per worker: parsed funcs by workload key


def build_one(inp: BuildInput) -> BuildResult:
    """Worker entry: schedule with the template, compile, export. Never raises."""
    t0 = time.perf_counter()
    cfg_json = Config(inp.index, inp.values).to_json()
    try:
        import tvm
        from tvm import s_tir
        from tvm.script import from_source

        import schedules
        from schedules.common import shared_alloc_bytes
        from tefuse.codegen.build import compile_mod
        from tefuse.target import ensure_cuda_compiler

        from .features import tir_features

        target = tvm.target.Target(inp.target)
        if target.kind.name == "cuda":
            ensure_cuda_compiler()
        func = _FUNCS.get(inp.key)
        if func is None:
            func = _FUNCS[inp.key] = from_source(inp.script)
        templates = [t for t in schedules.get_templates(target.kind.name, inp.info.anchor_kind)
                     if t.name == inp.template]
        if not templates:
            raise RuntimeError(f"no template {inp.template!r} for {target.kind.name}/{inp.info.anchor_kind}")
        sch = s_tir.Schedule(func)
        templates[0].apply(sch, inp.info, Config(inp.index, inp.values), target)
        feats = tir_features(sch.mod)
        max_threads = target.attrs.get("max_threads_per_block")
        if target.kind.name != "llvm" and max_threads and feats["threads"] > int(max_threads):
            raise RuntimeError(f"{int(feats['threads'])} threads per block > {int(max_threads)}")
        max_shared = target.attrs.get("max_shared_memory_per_block")
        if target.kind.name != "llvm" and max_shared:
            # refused here in milliseconds, instead of by the device compiler in seconds
            need = shared_alloc_bytes(sch.mod)
            if need > int(max_shared):
                raise RuntimeError(f"{need} bytes of shared memory per block > {int(max_shared)}")
        module = compile_mod(sch.mod, target)
        module.export_library(inp.out_path)
        return BuildResult(inp.index, cfg_json, inp.out_path, build_seconds=time.perf_counter() - t0,
                           features=feats)
    except Exception as e:  # noqa: BLE001 - schedule errors, TVM errors, nvcc errors
        return BuildResult(inp.index, cfg_json, None, COMPILE_ERROR, _last_line(e),
                           time.perf_counter() - t0)


def _warm(_: int = 0) -> int:
    import tvm  # noqa: F401

    import tefuse  # noqa: F401

    return os.getpid()


class LocalBuilder:
    """Parallel builds on this machine. `n_parallel` defaults to the CPU count."""

    def __init__(self, n_parallel: Optional[int] = None, timeout: float = 30.0,
                 mp_context: str = "spawn", workdir: Optional[str] = None) -> None:
        self.n_parallel = max(1, n_parallel or os.cpu_count() or 1)
        self.timeout = timeout
        self.mp_context = mp_context
        self._own_dir = workdir is None
        self.workdir = workdir or tempfile.mkdtemp(prefix="tefuse-build-")
        self._pool: Optional[cf.ProcessPoolExecutor] = None
        self._count = 0

    def _get_pool(self) -> cf.ProcessPoolExecutor:
        if self._pool is None:
            self._pool = cf.ProcessPoolExecutor(self.n_parallel, mp_context=mp.get_context(self.mp_context))
            # start every worker now, so import time is not charged to the first builds' timeout
            list(self._pool.map(_warm, range(self.n_parallel)))
        return self._pool

    def _kill_pool(self) -> None:
        if self._pool is None:
            return
        for p in list(getattr(self._pool, "_processes", {}).values()):
            p.kill()
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._pool = None

    def build(self, task: Task, template: str, configs: Sequence[Config]) -> list[BuildResult]:
        """Build every config; results in the order given."""
        target = task.target.export()
        inputs = []
        for cfg in configs:
            self._count += 1
            path = os.path.join(self.workdir, f"cand{self._count}_{cfg.index}.so")
            inputs.append(BuildInput(task.workload, task.func_script(), task.info, template, target,
                                     cfg.index, dict(cfg.values), path))
        pool = self._get_pool()
        futures = [pool.submit(build_one, i) for i in inputs]
        results: list[BuildResult] = []
        deadline = time.monotonic() + self.timeout * (1 + len(inputs) // self.n_parallel)
        broken = False
        for inp, fut in zip(inputs, futures):
            cfg_json = Config(inp.index, inp.values).to_json()
            try:
                results.append(fut.result(timeout=max(0.1, deadline - time.monotonic())))
            except cf.TimeoutError:
                broken = True
                results.append(BuildResult(inp.index, cfg_json, None, TIMEOUT,
                                           f"build took over {self.timeout:.0f}s"))
            except Exception as e:  # noqa: BLE001 - a worker crashed (BrokenProcessPool)
                broken = True
                results.append(BuildResult(inp.index, cfg_json, None, COMPILE_ERROR,
                                           f"build worker died: {_last_line(e)}"))
        if broken:
            self._kill_pool()
        return results

    def close(self) -> None:
        self._kill_pool()
        if self._own_dir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> "LocalBuilder":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
