"""A measuring slot driven from a process of its own.

Why: an RPC slot makes a dozen short TVM calls a candidate (upload, load, run, check, time),
and each call gives the GIL back and waits for it on return. In the tuner's process, beside the
search's and the builders' busy threads, those waits cost more than the calls: on loopback,
with four busy Python threads beside it, a candidate's calls took 230 ms at the default 5 ms
switch interval and 22 ms at 0.1 ms, against 0.6 ms in a quiet process. So the slot lives in a
spawned process (as a LocalRunner's measurements do) and the tuner only hands it a candidate
and waits for the result, without holding the GIL.

`ProcessSlot(make)` builds the slot in the worker with `make()` (a picklable factory, such as a
functools.partial of a Slot class) and forwards acquire / measure / reacquire / close to it.
A worker that dies or stops answering is killed and counts as a lost device (DeviceLost); the
next reacquire starts a fresh one.
"""
from __future__ import annotations

import concurrent.futures as cf
import logging
import multiprocessing as mp
import os
from typing import Callable, Optional

from .measure import BuildResult, MeasureResult, RunSpec, last_line
from .parallel import DeviceLost, Slot
from .procs import die_with_parent, ignore_sigint, kill_pool

_SLOT: dict = {}  # in the worker: "slot" -> the slot it drives


def _init(parent_pid: int, make: Callable[[], Slot], level: int, fmt: str) -> None:
    ignore_sigint()
    die_with_parent(parent_pid)
    logging.basicConfig(level=level, format=fmt)  # the slot's messages, as the tuner shows its own
    _SLOT["slot"] = make()


def _log_setup() -> tuple[int, str]:
    """The tuner's level for tefuse's messages and its first handler's format: the worker logs
    to the same stderr the same way."""
    level = logging.getLogger("tefuse").getEffectiveLevel()
    for logger in (logging.getLogger("tefuse"), logging.getLogger()):
        for h in logger.handlers:
            fmt = getattr(h.formatter, "_fmt", None)
            if fmt:
                return level, fmt
    return level, "%(message)s"


def _call(method: str, args: tuple):
    """Worker side: the slot's method, then its name and state. Errors other than DeviceLost
    cross back as one line (a TVM error need not pickle)."""
    slot = _SLOT["slot"]
    try:
        value = getattr(slot, method)(*args)
    except DeviceLost:
        raise
    except Exception as e:  # noqa: BLE001 - sent back as one line
        raise RuntimeError(last_line(e) if str(e) else type(e).__name__) from None
    return value, slot.name, slot.dead


class ProcessSlot(Slot):
    """The slot `make()` builds, living in a spawned worker process. `timeout`: seconds a call
    may take before the worker counts as hung (None: no bound; the slot's own timeout, such as an
    RPC slot's, comes first)."""

    def __init__(self, make: Callable[[], Slot], name: str = "device", timeout: Optional[float] = None) -> None:
        self.make = make
        self.name = name
        self.timeout = timeout
        self._pool: Optional[cf.ProcessPoolExecutor] = None

    def _get_pool(self) -> cf.ProcessPoolExecutor:
        if self._pool is None:
            self._pool = cf.ProcessPoolExecutor(1, mp_context=mp.get_context("spawn"), initializer=_init,
                                                initargs=(os.getpid(), self.make, *_log_setup()))
        return self._pool

    def _kill(self) -> None:
        if self._pool is not None:
            kill_pool(self._pool)
            self._pool = None

    def _call(self, method: str, *args, timeout: Optional[float] = None):
        """The worker's slot.method(*args); a worker that dies or passes `timeout` is killed and
        raises DeviceLost."""
        fut = self._get_pool().submit(_call, method, args)
        try:
            value, self.name, self.dead = fut.result(timeout=timeout)
        except cf.TimeoutError:
            self._kill()
            raise DeviceLost(f"no answer from the measuring process in {timeout:g}s") from None
        except cf.process.BrokenProcessPool as e:
            self._kill()
            raise DeviceLost(f"the measuring process died: {last_line(e)}") from None
        return value

    def acquire(self, wait: Optional[float]) -> None:
        """The worker's slot.acquire(wait) (an RPC session); a worker that cannot start raises."""
        try:
            self._call("acquire", wait, timeout=None if wait is None else wait + 60)
        except DeviceLost as e:
            raise RuntimeError(str(e)) from None

    def measure(self, spec: RunSpec, kind: str, build: BuildResult,
                reference: Optional[BuildResult]) -> MeasureResult:
        return self._call("measure", spec, kind, build, reference, timeout=self.timeout)

    def reacquire(self) -> bool:
        try:
            return bool(self._call("reacquire"))
        except (DeviceLost, RuntimeError):
            return False

    def warm(self, kind: str) -> None:
        self._get_pool()

    def close(self) -> None:
        if self._pool is not None:
            try:
                self._call("close", timeout=10)
            except (DeviceLost, RuntimeError):
                pass
        self._kill()
