"""Builder: apply configs and compile candidates in parallel worker processes.

Workers are TVM's own popen pool (`tvm.support.popen_pool`): fresh interpreters (no forked
TVM thread pool), kept for the whole tuning run so TVM is imported once per worker, a
per-candidate timeout that kills and replaces only the worker that hung, and workers that
die with the tuner, even mid-build and even when it is SIGKILLed (procs.die_with_parent). Each worker runs the same
compile path as `build()` (`codegen.compile.compile_kernel`); every failure becomes a
BuildResult with an error kind, never an exception. What the workers write to stderr (TVM's
native warnings) comes back as log lines at level 15 (`tefuse -v`): through logging, a line
is printed above a progress bar instead of across it.
"""
from __future__ import annotations

import itertools
import logging
import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Optional, Sequence

from ..schedules import KernelInfo
from ..schedules.space import Config
from .measure import COMPILE_ERROR, TIMEOUT, BuildResult, last_line
from .popen import LeanPopenPoolExecutor
from .procs import WorkersClosed
from .task import Task

log = logging.getLogger(__name__)
WORKER_OUTPUT = logging.INFO - 5  # the driver's VERBOSE: shown with `tefuse -v`
# Build workers run this much nicer than the tuner: every CPU builds, and the measuring
# processes (the devices' launches, the reference checks) and the tuner's own threads must
# not wait behind a compile, or each added device measures slower than the first.
BUILD_NICENESS = 5


def _stderr_pipe() -> int:
    """The write end of a pipe whose lines are logged (at WORKER_OUTPUT) by a daemon thread,
    until every writer has closed it."""
    r, w = os.pipe()

    def pump() -> None:
        with os.fdopen(r, "r", errors="replace") as f:
            for line in f:
                if line.strip():
                    log.log(WORKER_OUTPUT, "build worker: %s", line.rstrip())

    threading.Thread(target=pump, name="tefuse-build-stderr", daemon=True).start()
    return w


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
    """Worker entry: schedule with the template, check the target's limits, compile, export.
    Never raises."""
    t0 = time.perf_counter()
    cfg_json = Config(inp.index, inp.values).to_json()
    try:
        import tvm
        from tvm.script import from_source

        from .. import schedules
        from ..codegen.compile import KernelSpec, compile_kernel
        from ..target import ensure_cuda_compiler, ensure_rocm_toolchain
        from .features import tir_features

        target = tvm.target.Target(inp.target)
        if target.kind.name == "cuda":
            ensure_cuda_compiler()
        elif target.kind.name == "rocm":
            ensure_rocm_toolchain()
        func = _FUNCS.get(inp.key)
        if func is None:
            func = _FUNCS[inp.key] = from_source(inp.script)
        templates = [t for t in schedules.get_templates(target, inp.info.anchor_kind) if t.name == inp.template]
        if not templates:
            raise RuntimeError(f"no template {inp.template!r} for {target.kind.name}/{inp.info.anchor_kind}")
        spec = KernelSpec(inp.key, func, inp.info, templates[0], Config(inp.index, inp.values))
        mod, module = compile_kernel(spec, target)
        module.export_library(inp.out_path)
        return BuildResult(inp.index, cfg_json, inp.out_path, build_seconds=time.perf_counter() - t0,
                           features=tir_features(mod))
    except Exception as e:  # noqa: BLE001 - schedule errors, limits, TVM errors, nvcc errors
        return BuildResult(inp.index, cfg_json, None, COMPILE_ERROR, last_line(e),
                           time.perf_counter() - t0)


def _warm(parent_pid: int, target_kind: Optional[str] = None, pid_dir: Optional[str] = None) -> int:
    from .procs import die_with_parent, ignore_sigint

    ignore_sigint()
    die_with_parent(parent_pid)  # a SIGKILLed tuner leaves no build worker behind
    if hasattr(os, "getpriority"):  # POSIX; once per worker (this runs again for each warm() call)
        want = min(os.getpriority(os.PRIO_PROCESS, parent_pid) + BUILD_NICENESS, 19)
        if os.getpriority(os.PRIO_PROCESS, 0) < want:
            os.nice(want - os.getpriority(os.PRIO_PROCESS, 0))
    if pid_dir:  # so that close() can end this worker even while a pool thread waits on it
        os.makedirs(pid_dir, exist_ok=True)
        open(os.path.join(pid_dir, str(os.getpid())), "w").close()
    import tvm  # noqa: F401

    from .. import schedules  # imports tefuse: ops and templates registered

    if target_kind:
        schedules.preload(target_kind)  # e.g. CUDA tensor intrinsics: seconds, not in a timed build
    return os.getpid()


class LocalBuilder:
    """Parallel builds on this machine. `n_parallel` defaults to the CPU count."""

    def __init__(self, n_parallel: Optional[int] = None, timeout: float = 30.0,
                 workdir: Optional[str] = None) -> None:
        self.n_parallel = max(1, n_parallel or os.cpu_count() or 1)
        self.timeout = timeout
        self._own_dir = workdir is None
        self.workdir = workdir or tempfile.mkdtemp(prefix="tefuse-build-")
        self._pool: Optional[LeanPopenPoolExecutor] = None
        self._pool_lock = threading.Lock()
        self._stderr: Optional[int] = None  # the workers' stderr (see _stderr_pipe)
        self._count = itertools.count(1)  # candidate file names (build() may run from several threads)
        self._futures: set = set()  # builds submitted and not finished

    def _get_pool(self, target_kind: Optional[str] = None) -> LeanPopenPoolExecutor:
        with self._pool_lock:  # kernels tuned at once build from several threads: one pool
            return self._make_pool(target_kind)

    def _make_pool(self, target_kind: Optional[str]) -> LeanPopenPoolExecutor:
        if self._pool is None:
            # the initializer (TVM and tefuse imports) runs before a worker's first task and
            # outside its timeout, so import time is not charged to the first builds
            self._stderr = _stderr_pipe()
            self._pool = LeanPopenPoolExecutor(self.n_parallel, timeout=self.timeout, initializer=_warm,
                                               initargs=(os.getpid(), target_kind, self._pid_dir),
                                               stderr=self._stderr)
        return self._pool

    @property
    def _pid_dir(self) -> str:
        return os.path.join(self.workdir, "workers")

    def _submit(self, pool: LeanPopenPoolExecutor, fn, *args):
        """pool.submit, the future tracked until it is done (see close)."""
        try:
            fut = pool.submit(fn, *args)
        except RuntimeError:  # closed meanwhile: "cannot schedule new futures after shutdown"
            raise WorkersClosed("the builder was closed") from None
        with self._pool_lock:
            self._futures.add(fut)
        fut.add_done_callback(self._finished)
        return fut

    def _finished(self, fut) -> None:
        with self._pool_lock:
            self._futures.discard(fut)

    def warm(self, target_kind: Optional[str] = None) -> None:
        """Start the build workers now (each imports TVM, tefuse and what `target_kind`'s
        templates load lazily, once), e.g. before timing."""
        pool = self._get_pool(target_kind)
        futures = [self._submit(pool, _warm, os.getpid(), target_kind, self._pid_dir) for _ in range(self.n_parallel)]
        for fut in futures:
            fut.result()

    def build(self, task: Task, template: str, configs: Sequence[Config]) -> list[BuildResult]:
        """Build every config; results in the order given."""
        target = task.target.export()
        inputs = []
        for cfg in configs:
            path = os.path.join(self.workdir, f"cand{next(self._count)}_{cfg.index}.so")
            inputs.append(BuildInput(task.workload, task.func_script(), task.info, template, target,
                                     cfg.index, dict(cfg.values), path))
        pool = self._get_pool(task.target.kind.name)
        futures = [self._submit(pool, build_one, i) for i in inputs]
        results: list[BuildResult] = []
        for inp, fut in zip(inputs, futures):
            cfg_json = Config(inp.index, inp.values).to_json()
            try:
                results.append(fut.result())
            except TimeoutError:
                results.append(BuildResult(inp.index, cfg_json, None, TIMEOUT,
                                           f"build took over {self.timeout:.0f}s"))
            except Exception as e:  # noqa: BLE001 - a worker crashed (ChildProcessError)
                results.append(BuildResult(inp.index, cfg_json, None, COMPILE_ERROR,
                                           f"build worker died: {last_line(e)}"))
        if self._pool is not pool:  # closed while building: workers were killed, not the configs
            raise WorkersClosed("the builder was closed during a batch")
        return results

    def close(self, grace: float = 5.0) -> None:
        """End the workers, at once: builds not started are cancelled and workers still
        building are killed (a Ctrl-C must not wait for a batch). Safe to call twice, and from
        another thread than the one building (whose build() then raises WorkersClosed)."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
            futures, self._futures = set(self._futures), set()
        if pool is not None:
            for fut in futures:
                fut.cancel()  # not started: never sent to a worker
            deadline = time.monotonic() + grace
            while not all(f.done() for f in futures) and time.monotonic() < deadline:
                self._kill_workers()  # a pool thread waiting on a killed worker returns
                time.sleep(0.05)
            idle = all(f.done() for f in futures)
            if not idle:
                log.warning("build workers did not stop within %.0fs", grace)
            # with its threads idle, the pool's own shutdown kills what is left, racing nothing
            pool.shutdown(wait=idle)
        if self._stderr is not None:  # the pump ends once the workers have gone too
            os.close(self._stderr)
            self._stderr = None
        if self._own_dir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def _kill_workers(self) -> None:
        """SIGKILL this builder's workers (and what they started), as their initializer listed them."""
        import psutil

        try:
            pids = [int(n) for n in os.listdir(self._pid_dir)]
        except OSError:
            return
        for pid in pids:
            try:
                p = psutil.Process(pid)
                if p.ppid() != os.getpid():  # gone, and its pid reused
                    continue
                for q in [*p.children(recursive=True), p]:
                    q.kill()
            except psutil.Error:
                continue

    def __enter__(self) -> "LocalBuilder":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
