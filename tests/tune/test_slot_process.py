"""ProcessSlot: a slot driven from a spawned process (tune/slot_process.py)."""
import functools
import logging
import os
import signal
import time

import threading

import pytest

from tefuse.tune.measure import MeasureResult
from tefuse.tune.parallel import DeviceLost, ParallelRunner, Slot
from tefuse.tune.slot_process import ProcessSlot


class FakeSlot(Slot):
    """Measures in the worker: its cost is the worker's pid; `how` makes it misbehave."""

    def __init__(self, how: str = "") -> None:
        self.how, self.name, self.acquired = how, "fake", 0

    def acquire(self, wait):
        self.acquired += 1
        self.name = f"fake:{os.getpid()}"

    def measure(self, spec, kind, build, reference):
        if self.how == "exit":
            os._exit(3)
        if self.how == "hang":
            time.sleep(60)
        if self.how == "tvm":
            raise ValueError("first line\nthe line that says why")
        if self.how == "lost":
            raise DeviceLost("server gone")
        if self.how == "slow":  # a measurement's time: every slot of a runner gets a share
            time.sleep(0.2)
        if self.how == "logfail":
            logging.getLogger("tefuse.tune.fake").warning("about to fail")
            raise ValueError("cannot measure after shutdown of the session")
        if self.how == "prepared":  # what prepare was given, in the cost
            return MeasureResult(build.index, build.config, costs=[float(len(self.checks))])
        if self.how == "torch":  # 1.0 where TVM loaded and torch could not (TVM only in this mode)
            from .test_popen import torch_in_worker

            return MeasureResult(build.index, build.config, costs=[float(torch_in_worker() == "torch absent")])
        if self.how == "log":
            logging.getLogger("tefuse.tune.fake").info("readied %d", build.index)
            logging.getLogger("tefuse.tune.fake").debug("below the tuner's level")
        return MeasureResult(build.index, build.config, costs=[float(os.getpid()), float(self.acquired)])

    def reacquire(self):
        self.acquire(1)
        return True

    def prepare(self, checks, kind):
        time.sleep(0.3)  # a measurement submitted meanwhile waits for it
        self.checks = checks


class _Build:
    def __init__(self, index):
        self.index, self.config, self.ok, self.path = index, {"i": index}, True, ""


def _slot(how="", timeout=None):
    return ProcessSlot(functools.partial(FakeSlot, how), "fake", timeout)


def test_the_slot_measures_in_another_process_and_names_itself_from_there():
    slot = _slot()
    try:
        slot.acquire(5)
        res = slot.measure(None, "llvm", _Build(4), None)
        pid = int(res.costs[0])
        assert pid != os.getpid() and slot.name == f"fake:{pid}"
        assert res.index == 4 and res.costs[1] == 1.0  # the same slot object kept its state
        assert int(slot.measure(None, "llvm", _Build(5), None).costs[0]) == pid  # one worker throughout
    finally:
        slot.close()


def test_the_worker_has_tvm_and_no_torch(torch_installed):
    """The factory comes pickled, so the module it imports (TVM with it) loads after torch is
    marked absent (procs.without_torch)."""
    slot = _slot("torch")
    try:
        slot.acquire(5)
        assert slot.measure(None, "llvm", _Build(1), None).costs == [1.0]
    finally:
        slot.close()


def test_a_worker_that_dies_is_a_lost_device_and_reacquire_starts_a_fresh_one():
    slot = _slot("exit")
    try:
        slot.acquire(5)
        with pytest.raises(DeviceLost, match="measuring process died"):
            slot.measure(None, "llvm", _Build(0), None)
        assert slot.reacquire()  # a new worker whose slot acquires
        old = slot.name
        with pytest.raises(DeviceLost):
            slot.measure(None, "llvm", _Build(1), None)
        assert slot.reacquire() and slot.name != old
    finally:
        slot.close()


def test_a_worker_that_stops_answering_is_killed_as_lost():
    slot = _slot("hang", timeout=1.0)
    try:
        slot.acquire(5)
        t0 = time.monotonic()
        with pytest.raises(DeviceLost, match="no answer from the measuring process in 1s"):
            slot.measure(None, "llvm", _Build(0), None)
        assert time.monotonic() - t0 < 20
    finally:
        slot.close()


def test_an_error_in_the_worker_comes_back_as_its_last_line_and_device_lost_as_itself():
    slot, lost = _slot("tvm"), _slot("lost")
    try:
        slot.acquire(5)
        with pytest.raises(RuntimeError) as err:
            slot.measure(None, "llvm", _Build(0), None)
        assert str(err.value) == "the line that says why"
        lost.acquire(5)
        with pytest.raises(DeviceLost, match="server gone"):
            lost.measure(None, "llvm", _Build(0), None)
    finally:
        slot.close()
        lost.close()


def test_a_parallel_runner_spreads_a_batch_over_process_slots():
    slots = [_slot("slow"), _slot("slow")]
    for s in slots:
        s.acquire(5)
    with ParallelRunner(lambda: slots) as runner:
        out = runner.run(None, "llvm", [_Build(i) for i in range(6)])
    assert [r.index for r in out] == list(range(6))
    assert len({int(r.costs[0]) for r in out}) == 2 and sum(runner.counts.values()) == 6


def test_a_worker_killed_while_idle_is_a_lost_device_not_an_error_of_each_later_candidate():
    slot = _slot()
    try:
        slot.acquire(5)
        pid = int(slot.measure(None, "llvm", _Build(0), None).costs[0])
        os.kill(pid, signal.SIGKILL)
        time.sleep(0.5)
        with pytest.raises(DeviceLost):
            slot.measure(None, "llvm", _Build(1), None)
        assert slot.reacquire()
        assert int(slot.measure(None, "llvm", _Build(2), None).costs[0]) not in (pid, os.getpid())
    finally:
        slot.close()


def test_closing_a_busy_slot_kills_its_worker_at_once_and_it_starts_no_other():
    slot = _slot("hang")
    slot.acquire(5)
    done = []
    t = threading.Thread(target=lambda: done.append(pytest.raises(DeviceLost, slot.measure, None, "llvm",
                                                                  _Build(0), None)))
    t.start()
    time.sleep(1.0)  # the worker is measuring
    t0 = time.monotonic()
    slot.close()
    t.join(10)
    assert time.monotonic() - t0 < 5 and done and not t.is_alive()
    assert not slot.reacquire() and slot._pool is None


def test_the_runner_keeps_a_slot_it_retired_dead():
    slot = _slot()
    try:
        slot.acquire(5)
        slot.dead = True
        slot.measure(None, "llvm", _Build(0), None)
        assert slot.dead
    finally:
        slot.close()


def test_what_the_workers_slot_logs_is_logged_here_at_the_tuners_level(caplog):
    caplog.set_level(logging.INFO, logger="tefuse")
    slot = _slot("log")
    try:
        slot.acquire(5)
        slot.measure(None, "llvm", _Build(7), None)
    finally:
        slot.close()
    got = [(r.name, r.levelno, r.getMessage()) for r in caplog.records if r.name == "tefuse.tune.fake"]
    assert got == [("tefuse.tune.fake", logging.INFO, "readied 7")]


def test_a_failing_calls_records_come_back_with_its_error_and_its_words_do_not_make_it_a_lost_device(caplog):
    from tefuse.tune.slot_process import SlotError

    caplog.set_level(logging.INFO, logger="tefuse")
    slot = _slot("logfail")
    try:
        slot.acquire(5)
        with pytest.raises(SlotError, match="cannot measure after shutdown of the session"):
            slot.measure(None, "llvm", _Build(0), None)
    finally:
        slot.close()
    assert [r.getMessage() for r in caplog.records if r.name == "tefuse.tune.fake"] == ["about to fail"]


def test_a_runners_prepare_reaches_each_workers_slot_before_its_first_candidate():
    """The output kinds of the specs (each (type, rank, target) once) go to every slot's
    prepare in the background; a candidate measured meanwhile waits for it."""
    from tefuse.tune.measure import ArgSpec, RunSpec

    slots = [_slot("prepared"), _slot("prepared")]
    for s in slots:
        s.acquire(5)
    specs = [RunSpec(w, [], [ArgSpec((2, 3), "float32"), ArgSpec((4,), "float32")], target={"kind": "llvm"})
             for w in ("a", "b")] + [RunSpec("c", [], [ArgSpec((1, 1), "float16")], target={"kind": "llvm"})]
    with ParallelRunner(lambda: slots) as runner:
        runner.prepare(specs, "llvm")
        out = runner.run(None, "llvm", [_Build(i) for i in range(4)])
    assert [r.costs[0] for r in out] == [3.0] * 4  # float32 rank 2, float32 rank 1, float16 rank 2
