"""A measuring slot driven from a process of its own.

Why: an RPC slot makes a dozen short TVM calls a candidate (upload, load, run, check, time),
and each call gives the GIL back and waits for it on return. In the tuner's process, beside the
search's and the builders' busy threads, those waits cost more than the calls: on loopback,
with four busy Python threads beside it, a candidate's calls took 230 ms at the default 5 ms
switch interval and 22-25 ms at 0.1 ms, against 0.6-0.8 ms in a quiet process. So the slot
lives in a spawned process (as a LocalRunner's measurements do) and the tuner only hands it a
candidate and waits for the result, without holding the GIL.

`ProcessSlot(make)` builds the slot in the worker with `make()` (a picklable factory, such as a
functools.partial of a Slot class) and forwards acquire / measure / reacquire / close to it.
A worker that dies (busy or idle) or stops answering is killed and counts as a lost device
(DeviceLost); the next reacquire starts a fresh one, until the slot is closed. What the
worker's slot logs comes back with each answer and is logged here, through the tuner's own
handlers (its format, its progress bars).
"""
from __future__ import annotations

import concurrent.futures as cf
import logging
import multiprocessing as mp
import os
import pickle
import threading
from typing import Callable, Optional

from .measure import BuildResult, MeasureResult, RunSpec, last_line
from .parallel import DeviceLost, Slot
from .procs import die_with_parent, ignore_sigint, kill_pool, without_torch

_WORKER: dict = {}  # in the worker: "slot" -> the slot it drives; "records" -> what it logged since


class _Keep(logging.Handler):
    """Worker side: tefuse's log records, kept to go back with the next answer."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            _WORKER["records"].append((record.name, record.levelno, record.getMessage()))
        except Exception:  # noqa: BLE001 - a record that cannot be formatted, as logging reports it
            self.handleError(record)


def _init(parent_pid: int, make: bytes, level: int) -> None:
    """`make` comes pickled, so that unpickling it (which imports its module, and TVM) follows
    without_torch."""
    without_torch()
    ignore_sigint()
    die_with_parent(parent_pid)
    _WORKER["records"] = []
    tefuse_log = logging.getLogger("tefuse")
    tefuse_log.setLevel(level)  # what the tuner would show, no more
    tefuse_log.addHandler(_Keep())
    tefuse_log.propagate = False
    _WORKER["slot"] = pickle.loads(make)()


class SlotError(RuntimeError):
    """An error of the worker's slot, as one line (a TVM error need not pickle)."""


def _call(method: str, args: tuple):
    """Worker side: the slot's method, then its name and the records it logged; an error
    (DeviceLost as itself, others as SlotError) carries the records too (`records`)."""
    slot = _WORKER["slot"]
    try:
        value = getattr(slot, method)(*args)
    except Exception as e:  # noqa: BLE001 - sent back, with what was logged before it
        err = e if isinstance(e, DeviceLost) else SlotError(last_line(e) if str(e) else type(e).__name__)
        err.records, _WORKER["records"] = _WORKER["records"], []
        raise err from None
    records, _WORKER["records"] = _WORKER["records"], []
    return value, slot.name, records


def _log(records) -> None:
    """Parent side: the worker's records, through the tuner's handlers."""
    for name, level, msg in records or ():
        logging.getLogger(name).log(level, msg)


class ProcessSlot(Slot):
    """The slot `make()` builds, living in a spawned worker process. `timeout`: seconds a
    measurement may take before the worker counts as hung (None: no bound; the slot's own
    timeout, such as an RPC slot's, comes first); `reacquire_timeout`: the same for getting a
    device again."""

    def __init__(self, make: Callable[[], Slot], name: str = "device", timeout: Optional[float] = None,
                 reacquire_timeout: Optional[float] = None) -> None:
        self.make = make
        self.name = name
        self.timeout = timeout
        self.reacquire_timeout = reacquire_timeout
        self._pool: Optional[cf.ProcessPoolExecutor] = None
        self._closed = False
        self._busy = 0  # calls in flight: close() then kills the worker instead of queueing behind them
        self._lock = threading.Lock()

    def _get_pool(self) -> cf.ProcessPoolExecutor:
        with self._lock:
            if self._closed:
                raise DeviceLost("the slot was closed")
            if self._pool is None:
                self._pool = cf.ProcessPoolExecutor(1, mp_context=mp.get_context("spawn"), initializer=_init,
                                                    initargs=(os.getpid(), pickle.dumps(self.make),
                                                              logging.getLogger("tefuse").getEffectiveLevel()))
            return self._pool

    def _kill(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            kill_pool(pool)

    def _submit(self, fn, *args, timeout: Optional[float] = None):
        """fn(*args) in the worker; a worker that dies (now or before, while idle), cannot
        start, is stopped meanwhile or passes `timeout` is killed and raises DeviceLost."""
        with self._lock:
            self._busy += 1
        try:
            try:
                fut = self._get_pool().submit(fn, *args)
            except cf.BrokenExecutor as e:  # died while idle (or never started)
                self._kill()
                raise DeviceLost(f"the measuring process died: {last_line(e)}") from None
            except RuntimeError:  # "cannot schedule new futures after shutdown": killed meanwhile
                raise DeviceLost("the measuring process was stopped") from None
            try:
                return fut.result(timeout=timeout)
            except cf.TimeoutError:
                self._kill()
                raise DeviceLost(f"no answer from the measuring process in {timeout:g}s") from None
            except cf.BrokenExecutor as e:  # died while measuring
                self._kill()
                raise DeviceLost(f"the measuring process died: {last_line(e)}") from None
            except cf.CancelledError:  # killed before it took the call
                raise DeviceLost("the measuring process was stopped") from None
        finally:
            with self._lock:
                self._busy -= 1

    def _call(self, method: str, *args, timeout: Optional[float] = None):
        """The worker's slot.method(*args), its name kept and its log records logged here (an
        error's too)."""
        try:
            value, self.name, records = self._submit(_call, method, args, timeout=timeout)
        except (DeviceLost, SlotError) as e:
            _log(getattr(e, "records", None))
            raise
        _log(records)
        return value

    def acquire(self, wait: Optional[float]) -> None:
        """The worker's slot.acquire(wait) (an RPC session); raises when there is none, or when
        the worker itself cannot start (said as such)."""
        try:
            self._call("acquire", wait, timeout=None if wait is None else wait + 60)
        except DeviceLost as e:
            raise RuntimeError(f"measuring process: {e}") from None

    def measure(self, spec: RunSpec, kind: str, build: BuildResult,
                reference: Optional[BuildResult]) -> MeasureResult:
        return self._call("measure", spec, kind, build, reference, timeout=self.timeout)

    def reacquire(self) -> bool:
        """A fresh worker where the last one was killed; False once closed or without a device."""
        if self._closed:
            return False
        try:
            timeout = None if self.reacquire_timeout is None else self.reacquire_timeout + 60
            return bool(self._call("reacquire", timeout=timeout))
        except (DeviceLost, SlotError):
            return False

    def warm(self, kind: str) -> None:
        """Start the worker now (spawning it imports TVM) and let its slot open its device."""
        self._ahead("warm", kind)

    def prepare(self, checks: list, kind: str) -> None:
        """The worker's slot.prepare: taken before the measurements submitted after it (one worker)."""
        self._ahead("prepare", checks, kind)

    def _ahead(self, method: str, *args) -> None:
        """A getting-ready call of the worker's slot; failing, it is left to the first measurement
        to say why."""
        try:
            self._call(method, *args, timeout=120)
        except (DeviceLost, SlotError):
            pass

    def close(self) -> None:
        """Close the worker's slot (its session) and end the worker; a worker busy measuring is
        killed at once (an interrupted tuner does not wait for it)."""
        busy, pool = self._busy, self._pool
        self._closed = True  # no new worker from here on (a reacquire racing this one)
        if pool is not None and not busy:
            try:
                _log(pool.submit(_call, "close", ()).result(timeout=10)[2])
            except Exception as e:  # noqa: BLE001 - a worker gone or hung: killed below either way
                _log(getattr(e, "records", None))
        self._kill()
