"""Measuring one batch on several devices at once: one thread per device, one candidate per
device at a time, results in the batch's order.

A device is a `Slot`: a local GPU (a LocalRunner whose worker process sees only that GPU) or
a session on one TVM RPC server (tune/rpc.py). A slot that loses its device mid-candidate
raises `DeviceLost`; that candidate goes back to the queue for another slot (at most
`max_attempts` slots try it, so a kernel that kills every session it runs in is recorded as
a runtime error instead of taking all the servers down), and the slot tries to get a device
again (`reacquire`) or retires. When no slot is left, `run` raises `DevicesLost` carrying the
results it already has, which the tuning loop writes before it stops.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import deque
from typing import Callable, Optional, Sequence

from ..errors import TefuseError
from ..gil import quick_gil_handoff
from .measure import RUNTIME_ERROR, BuildResult, MeasureResult, RunSpec, check_kinds

log = logging.getLogger(__name__)


class DeviceLost(Exception):
    """The slot's device (or its RPC session) went away; the candidate was not measured."""


class DevicesLost(TefuseError, RuntimeError):
    """Every device of a ParallelRunner is gone. `partial` holds the batch's results that
    were measured before (in batch order, unmeasured ones left out)."""

    def __init__(self, message: str, partial: Sequence[MeasureResult] = ()):
        super().__init__(message)
        self.partial = list(partial)


class Slot:
    """One device that measures one candidate at a time."""

    name = "device"  # which device measured (a server's host:port, cuda:1); may change on reacquire
    dead = False

    def measure(self, spec: RunSpec, kind: str, build: BuildResult,
                reference: Optional[BuildResult]) -> MeasureResult:
        raise NotImplementedError

    def reacquire(self) -> bool:
        """After DeviceLost: get a device again (True) or retire (False)."""
        return False

    def warm(self, kind: str) -> None:
        """Get ready to measure (start a worker process, open the device), so the first candidate
        does not pay."""

    def prepare(self, checks: list, kind: str) -> None:
        """Get ready for the outputs a run will check: (type, rank, target) each
        (measure.check_kinds). Only a slot that checks on its device needs to."""

    def close(self) -> None:
        pass


class LocalSlot(Slot):
    """A local device, measured in its own worker process that sees only that device."""

    def __init__(self, index: int, kind: str = "device", **runner_options) -> None:
        from .runner import LocalRunner

        self.index = index
        self.runner = LocalRunner(device_index=index, **runner_options)
        self.name = f"{'cpu' if kind == 'llvm' else kind}:{index}"

    def measure(self, spec, kind, build, reference):
        return self.runner.run(spec, kind, [build], reference)[0]

    def warm(self, kind: str) -> None:
        self.runner.warm(kind)

    def close(self) -> None:
        self.runner.close()


class ParallelRunner:
    """A runner (the LocalRunner interface) that spreads each batch over several slots.

    `open_slots` is called once, on first use, and returns the slots (RPC sessions are only
    opened then). `device` is what the records say they were measured on (None: the tuning
    loop names the local device); `counts` says how many candidates each slot measured and
    `retried` how many were moved to another slot after their device was lost.
    """

    what = "device"  # in messages: "all 2 devices are gone"
    concurrent_runs = True  # run() may be called from several threads: a device measures one at a time

    def __init__(self, open_slots: Callable[[], list[Slot]], device: Optional[str] = None,
                 max_attempts: int = 2) -> None:
        self._open = open_slots
        self._slots: Optional[list[Slot]] = None
        self.device = device
        self.max_attempts = max(1, max_attempts)
        self.counts: dict[str, int] = {}
        self.busy: dict[str, float] = {}  # seconds each slot spent measuring (its device's use)
        self.retried = 0
        self.lost: list[str] = []  # "name: why" for each device loss
        self._lock = threading.Lock()  # counts, lost, retried; and each run's queue
        self._busy: dict[int, threading.Lock] = {}  # per slot: held while it measures

    @property
    def slots(self) -> list[Slot]:
        if self._slots is None:
            self._slots = list(self._open())
        return self._slots

    @property
    def parallelism(self) -> int:
        """Devices measuring at once (opens the slots)."""
        return max(1, sum(not s.dead for s in self.slots))

    def warm(self, kind: str) -> None:
        """Ready every device at once (measuring processes started), e.g. before timing a run."""
        threads = [threading.Thread(target=s.warm, args=(kind,), daemon=True) for s in self.slots]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def prepare(self, specs: Sequence[RunSpec], kind: str) -> None:
        """Ready every device for these workloads' output checks, in the background: each slot
        takes it before its first candidate, which waits for the first builds anyway."""
        checks = check_kinds(specs)

        def prepare(slot: Slot) -> None:
            with self._busy_lock(slot):  # the slot's session is not to be shared with a measurement
                slot.prepare(checks, kind)

        for s in self.slots:
            if not s.dead:
                threading.Thread(target=prepare, args=(s,), daemon=True).start()

    def run(self, spec: RunSpec, target_kind: str, builds: Sequence[BuildResult],
            reference: Optional[BuildResult] = None) -> list[MeasureResult]:
        """The batch measured, results in its order. Under gil.quick_gil_handoff: an RPC slot
        makes a dozen short TVM calls a candidate, each giving the GIL back and waiting for it
        on return, and beside the tuner's busy threads each wait took up to the default 5 ms
        switch interval (a loopback server with two busy threads: 320-480 ms a candidate, 16-18
        ms at 0.1 ms)."""
        with quick_gil_handoff():
            return self._run(spec, target_kind, builds, reference)

    def _run(self, spec: RunSpec, target_kind: str, builds: Sequence[BuildResult],
             reference: Optional[BuildResult] = None) -> list[MeasureResult]:
        out: list[Optional[MeasureResult]] = [None] * len(builds)
        todo: deque[int] = deque()
        for pos, b in enumerate(builds):
            if b.ok:
                todo.append(pos)
            else:
                out[pos] = MeasureResult(b.index, b.config, error=b.error, error_msg=b.error_msg)
        tried: dict[int, list[str]] = {}  # position -> slots that lost their device on it
        lock = self._lock

        def give_up(pos: int, why: str) -> None:
            b = builds[pos]
            out[pos] = MeasureResult(b.index, b.config, error=RUNTIME_ERROR,
                                     error_msg=f"{self.what} lost while measuring it on "
                                               f"{', '.join(tried.get(pos, []))}: {why}"[:500])

        def take(slot: Slot) -> Optional[int]:
            with lock:
                for pos in todo:
                    if slot.name not in tried.get(pos, ()):
                        todo.remove(pos)
                        return pos
            return None

        def work(slot: Slot) -> None:
            busy = self._busy_lock(slot)
            while True:
                with busy:  # runs from other threads may share this slot: one candidate at a time
                    if slot.dead or not measure_next(slot):
                        return

        def measure_next(slot: Slot) -> bool:
            """Measure one candidate of this run on slot; False when none is left for it (or
            the slot retired)."""
            if (pos := take(slot)) is None:
                return False
            name, b = slot.name, builds[pos]
            t0 = time.perf_counter()
            try:
                res = slot.measure(spec, target_kind, b, reference)
            except DeviceLost as e:
                why = str(e) or type(e).__name__
                with lock:
                    self.lost.append(f"{name}: {why}")
                    tried.setdefault(pos, []).append(name)
                    if len(tried[pos]) >= self.max_attempts:
                        give_up(pos, why)
                    else:
                        todo.appendleft(pos)
                        self.retried += 1
                log.warning("%s %s lost while measuring #%d (%s); the candidate goes to another %s",
                            self.what, name, b.index, why, self.what)
                if not slot.reacquire():
                    slot.dead = True
                    log.warning("%s %s retired; %d left", self.what, name,
                                sum(not s.dead for s in self.slots))
                    return False
                return True
            except Exception as e:  # noqa: BLE001 - a slot bug must not hang the batch
                res = MeasureResult(b.index, b.config, error=RUNTIME_ERROR,
                                    error_msg=f"{name}: {type(e).__name__}: {e}"[:500])
            with lock:
                out[pos] = res
                self.counts[name] = self.counts.get(name, 0) + 1
                self.busy[name] = self.busy.get(name, 0.0) + time.perf_counter() - t0
            return True

        while todo:
            live = [s for s in self.slots if not s.dead]
            if not live:
                done = [r for r in out if r is not None]
                last = f" (last: {self.lost[-1]})" if self.lost else ""
                raise DevicesLost(f"all {len(self.slots)} {self.what}s are gone{last}; "
                                  f"{len(done)} of {len(builds)} results of the batch kept", done)
            with lock:  # a candidate every live slot has lost its device on: not retried again
                for pos in [p for p in todo if all(s.name in tried.get(p, ()) for s in live)]:
                    todo.remove(pos)
                    give_up(pos, "no other " + self.what)
            if not todo:
                break
            threads = [threading.Thread(target=work, args=(s,), name=f"measure-{s.name}", daemon=True)
                       for s in live]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        return [r for r in out if r is not None]

    def _busy_lock(self, slot: Slot) -> threading.Lock:
        with self._lock:
            return self._busy.setdefault(id(slot), threading.Lock())

    def summary(self) -> str:
        """e.g. '2 devices: cuda:0 31, cuda:1 33; 1 retried after a device was lost'."""
        per = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
        s = f"measured on {len(self.counts)} {self.what}(s): {per or 'none'}"
        return s + (f"; {self.retried} retried after a {self.what} was lost" if self.retried else "")

    def close(self) -> None:
        for s in self._slots or []:
            try:
                s.close()
            except Exception:  # noqa: BLE001
                pass

    def __enter__(self) -> "ParallelRunner":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def local_devices_runner(indices: Sequence[int], kind: str = "device", **runner_options) -> ParallelRunner:
    """One measuring process per local device index (`tefuse tune --devices 0,1`); `kind`
    (the target kind: cuda, rocm, llvm) only names the devices in counts and messages."""
    indices = list(dict.fromkeys(int(i) for i in indices))
    if not indices:
        raise ValueError("no device indices")
    return ParallelRunner(lambda: [LocalSlot(i, kind, **runner_options) for i in indices])
