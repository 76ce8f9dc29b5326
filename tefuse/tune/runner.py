"""LocalRunner: time built candidates on this machine's device, one at a time.

By default the timing happens in one spawned worker process that lives for the whole
run: a kernel that crashes the process or hangs (a timeout) costs a restart of that
worker, not the tuning session. Inputs and the reference output are made once per
workload in the worker and reused for every candidate.

With `device_index=i` the worker is pinned to local device i: it starts with
CUDA_VISIBLE_DEVICES (HIP_VISIBLE_DEVICES for ROCm) naming only that GPU, so its CUDA context
lives there and nowhere else (`tefuse tune --devices 0,1` runs one such runner per GPU, see
tune/parallel.py). On the CPU target the index only names the worker.
"""
from __future__ import annotations

import concurrent.futures as cf
import logging
import multiprocessing as mp
import os
from typing import Optional, Sequence

from .measure import (RUNTIME_ERROR, TIMEOUT, BuildResult, MeasureResult, RunOptions, RunSpec,
                      last_line, measure_module, open_device, poison_tensors)
from .procs import WorkersClosed, die_with_parent, ignore_sigint, kill_pool, without_torch

log = logging.getLogger(__name__)

_STATE: dict = {}  # per process: (key, device kind) -> (device, input tensors); reference outputs


_VISIBLE = {"cuda": "CUDA_VISIBLE_DEVICES", "rocm": "HIP_VISIBLE_DEVICES"}


def init_worker(parent_pid: int, kind: str, index) -> None:
    """Measuring worker: Ctrl-C is the tuner's to handle, die with the tuner (even SIGKILLed),
    then see only its device if pinned; torch is not loaded (it never measures with it)."""
    without_torch()
    ignore_sigint()
    die_with_parent(parent_pid)
    if index is not None:
        _pin(kind, index)


def _pin(kind: str, index: int) -> bool:
    """Worker initializer: see only device `index` (of those already visible), as device 0."""
    var = _VISIBLE.get(kind)
    if var is not None:
        visible = [v for v in os.environ.get(var, "").split(",") if v.strip()]
        if visible and index >= len(visible):
            raise RuntimeError(f"device {index}: {var}={os.environ[var]} makes only {len(visible)} visible")
        os.environ[var] = visible[index] if visible else str(index)
    _STATE["index"] = 0 if var is not None else index
    return _warm()


def _device(kind: str):
    import tvm

    index = _STATE.get("index", 0)
    return tvm.cpu(index) if kind == "llvm" else tvm.device(kind, index)


def _inputs(spec: RunSpec, kind: str):
    import tvm

    k = ("in", spec.key, spec.seed, kind)
    if k not in _STATE:
        dev = _device(kind)
        _STATE[k] = (dev, [tvm.runtime.tensor(a, dev) for a in spec.inputs()])
    return _STATE[k]


def _reference(spec: RunSpec, kind: str, ref_path: Optional[str]):
    """Outputs of the reference build on the same inputs; None without one (or if it fails)."""
    import tvm

    if ref_path is None:
        return None
    k = ("ref", spec.key, spec.seed, kind, ref_path)
    if k not in _STATE:
        dev, ins = _inputs(spec, kind)
        try:
            mod = tvm.runtime.load_module(ref_path)
            outs = [tvm.runtime.empty(o.shape, o.dtype, dev) for o in spec.outputs]
            mod["main"](*ins, *outs)
            dev.sync()
            _STATE[k] = [o.numpy() for o in outs]
        except Exception as e:  # noqa: BLE001
            log.warning("reference run failed (%s): candidates go unchecked", last_line(e))
            _STATE[k] = None
    return _STATE[k]


def _poison(spec: RunSpec, kind: str) -> list:
    """The workload's poisoned outputs on the device (measure.poison_value), kept for the
    workload measured last only: a batch-256 model's outputs are hundreds of MB each, and a batch
    of candidates is one workload's, so each batch makes them once at most."""
    k = (spec.key, kind)
    if (_STATE.get("poison") or (None,))[0] != k:
        _STATE["poison"] = None  # the last workload's freed first
        _STATE["poison"] = (k, poison_tensors(spec.outputs, _device(kind)))
    return _STATE["poison"][1]


def run_one(spec: RunSpec, kind: str, build: BuildResult, ref_path: Optional[str],
            opts: RunOptions) -> MeasureResult:
    """Worker entry (also called in-process): measure one built candidate."""
    import tvm

    dev, ins = _inputs(spec, kind)
    ref = _reference(spec, kind, ref_path) if opts.check else None
    return measure_module(lambda: tvm.runtime.load_module(build.path), dev, ins, spec.outputs, ref,
                          opts, build.index, build.config, poison=_poison(spec, kind) if ref is not None else None,
                          rounding=spec.rounding)


def _open_device(kind: str) -> None:
    """Worker side: measure.open_device on this worker's device."""
    open_device(_device(kind))


def _warm() -> bool:
    import tvm  # noqa: F401

    return True


class LocalRunner:
    """Times candidates on the local device (cpu for llvm, cuda when the target is cuda)."""

    def __init__(self, number: int = 0, repeat: int = 3, min_repeat_ms: int = 20, timeout: float = 20.0,
                 check: bool = True, isolated: bool = True, device_index: Optional[int] = None) -> None:
        self.opts = RunOptions(number, repeat, min_repeat_ms, check)
        self.timeout = timeout
        self.isolated = isolated
        self.device_index = device_index
        if device_index is not None and not isolated:
            raise ValueError("a runner pinned to a device index measures in its own process (isolated=True)")
        self._pool: Optional[cf.ProcessPoolExecutor] = None
        self._closes = 0  # close() calls: a run that sees it change was interrupted

    def _get_pool(self, kind: str) -> cf.ProcessPoolExecutor:
        if self._pool is None:
            self._pool = cf.ProcessPoolExecutor(1, mp_context=mp.get_context("spawn"), initializer=init_worker,
                                                initargs=(os.getpid(), kind, self.device_index))
            self._pool.submit(_warm).result()
        return self._pool

    def _submit(self, kind: str, fn, *args) -> cf.Future:
        try:
            return self._get_pool(kind).submit(fn, *args)
        except RuntimeError:  # "cannot schedule new futures after shutdown": closed meanwhile
            raise WorkersClosed("the runner was closed during a batch") from None

    def warm(self, kind: str) -> None:
        """Start the measuring process now (it imports TVM; pinned runners see their device) and
        open its device (a GPU's first use starts its CUDA context, seconds the first candidate
        would otherwise wait for)."""
        if self.isolated:
            try:
                self._submit(kind, _open_device, kind).result(timeout=self.timeout + 60)
            except Exception as e:  # noqa: BLE001 - the first measurement says what is wrong
                log.info("device not opened ahead: %s", last_line(e))

    def _kill_pool(self) -> None:
        if self._pool is not None:
            kill_pool(self._pool)
            self._pool = None

    def run(self, spec: RunSpec, target_kind: str, builds: Sequence[BuildResult],
            reference: Optional[BuildResult] = None) -> list[MeasureResult]:
        """Measure the built candidates in order; those that failed to build pass through
        with their build error."""
        ref_path = reference.path if reference is not None and reference.ok else None
        out = []
        closes = self._closes
        for b in builds:
            if self._closes != closes:  # closed from another thread: the tuner was interrupted
                raise WorkersClosed("the runner was closed during a batch")
            if not b.ok:
                out.append(MeasureResult(b.index, b.config, error=b.error, error_msg=b.error_msg))
                continue
            if not self.isolated:
                out.append(run_one(spec, target_kind, b, ref_path, self.opts))
                continue
            fut = self._submit(target_kind, run_one, spec, target_kind, b, ref_path, self.opts)
            try:
                # the first candidate of a workload also runs the reference
                out.append(fut.result(timeout=self.timeout * 2))
            except cf.TimeoutError:
                self._kill_pool()
                out.append(MeasureResult(b.index, b.config, error=TIMEOUT,
                                         error_msg=f"run took over {self.timeout:.0f}s"))
            except Exception as e:  # noqa: BLE001 - the worker died (segfault, abort)
                self._kill_pool()
                if self._closes != closes:
                    raise WorkersClosed("the runner was closed during a batch") from None
                out.append(MeasureResult(b.index, b.config, error=RUNTIME_ERROR,
                                         error_msg=f"runner worker died: {last_line(e)}"))
        if self._closes != closes:
            raise WorkersClosed("the runner was closed during a batch")
        return out

    def close(self) -> None:
        self._closes += 1
        self._kill_pool()

    def __enter__(self) -> "LocalRunner":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
