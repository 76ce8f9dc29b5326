"""Measuring through TVM's RPC on loopback (127.0.0.1 only), llvm target: one server, several
servers spread over in parallel, a server killed mid-run; and several local devices."""
from __future__ import annotations

import re
import threading
import time

import numpy as np
import pytest

from tefuse import GraphBuilder
from tefuse.cli import main
from tefuse.tune.builder import LocalBuilder
from tefuse.tune.database import Database
from tefuse.tune.loop import tune
from tefuse.tune.measure import BuildResult, MeasureResult, RunSpec
from tefuse.tune.parallel import DeviceLost, DevicesLost, ParallelRunner, Slot
from tefuse.tune.rpc import RPCRunner, RPCSlot, start_local_rpc
from tefuse.tune.slot_process import ProcessSlot


@pytest.fixture(autouse=True)
def _own_user_cache(tmp_path, monkeypatch):
    """The output checks' counters are kept in the user cache (paths.check_kernel_dir): each
    test its own, not the machine's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))



def _graph():
    b = GraphBuilder()
    x = b.input("x", (1, 4, 8, 8))
    y = b.relu(b.conv2d(x, b.const(np.ones((4, 4, 3, 3), "float32")), padding=1))
    return b.build(y)


@pytest.fixture(scope="module")
def builder():
    with LocalBuilder(n_parallel=2, timeout=60) as b:
        yield b


def _tracker_or_skip():
    pytest.importorskip("tornado", reason="TVM's RPC tracker needs tornado")


@pytest.mark.parametrize("with_tracker", [False, True], ids=["server", "tracker"])
def test_tune_through_rpc_on_loopback(tmp_path, builder, with_tracker):
    if with_tracker:
        _tracker_or_skip()
    rpc = start_local_rpc("tefuse-test", with_tracker=with_tracker)
    try:
        if with_tracker:
            runner = RPCRunner(key="tefuse-test", tracker=rpc.tracker_address, min_repeat_ms=1)
        else:
            runner = RPCRunner(key="tefuse-test", server=("127.0.0.1", rpc.server_port), min_repeat_ms=1)
        log = tmp_path / "rpc.jsonl"
        with runner:
            res = tune(_graph(), "llvm", trials=3, tuner="random", log=str(log), builder=builder, runner=runner)
        recs = Database(log).records()
        assert len(recs) == 3
        assert all(r.ok for r in recs), [r.error_msg for r in recs]
        assert all(r.device.startswith("rpc:") for r in recs)
        assert res[0].best_cost > 0
        assert runner.counts == {f"127.0.0.1:{rpc.server_port}": 3}
    finally:
        rpc.close()


# test_tune_through_rpc_on_loopback covers a server by default
@pytest.mark.slow
def test_cli_tune_spreads_a_batch_over_every_server_under_the_key(tmp_path, capsys):
    _tracker_or_skip()
    rpc = start_local_rpc("tefuse-two", servers=2)
    try:
        log = tmp_path / "two.jsonl"
        argv = ["tune", "conv2d(k=8,r=3,pad=1)+bias+relu", "--input", "1x8x10x10", "-t", "llvm",
                "--trials", "8", "--tuner", "random", "--log", str(log), "-j", "2", "--no-progress",
                "--rpc", f"127.0.0.1:{rpc.tracker_port}", "--key", "tefuse-two"]
        assert main(argv) == 0
        out = capsys.readouterr().out
        counts = dict(re.findall(r"127\.0\.0\.1:(\d+) (\d+)", out.split("measured on 2 RPC server(s):")[1]))
        assert set(map(int, counts)) == set(rpc.server_ports), out
        assert all(int(n) > 0 for n in counts.values()) and sum(map(int, counts.values())) == 8, out
        recs = Database(log).records()
        assert len(recs) == 8 and all(r.ok for r in recs), [r.error_msg for r in recs]
        assert {r.device for r in recs} == {"rpc:tefuse-two"}
        assert len({r.config_index for r in recs}) == 8
    finally:
        rpc.close()


# starts, kills and waits out servers: most of a minute
@pytest.mark.slow
def test_a_server_killed_mid_run_costs_only_its_in_flight_candidate(tmp_path, builder, monkeypatch):
    """Server B dies while measuring its second candidate: that candidate is measured again on
    server A, every config of the budget gets a record, none of them an error."""
    _tracker_or_skip()
    rpc = start_local_rpc("tefuse-kill", servers=2)
    victim = f"127.0.0.1:{rpc.server_ports[1]}"
    seen: dict[str, int] = {}
    real = ProcessSlot.measure  # the tuner's side of each session's measuring process
    lock = threading.Lock()

    def measure(slot, spec, kind, build, reference):
        with lock:
            seen[slot.name] = seen.get(slot.name, 0) + 1
            if slot.name == victim and seen[victim] == 2:
                rpc.kill_server(1)  # in flight: the upload and run below hit a dead server
        return real(slot, spec, kind, build, reference)

    monkeypatch.setattr(ProcessSlot, "measure", measure)
    try:
        runner = RPCRunner(key="tefuse-kill", tracker=rpc.tracker_address, min_repeat_ms=1,
                           reacquire_timeout=2)
        log = tmp_path / "kill.jsonl"
        with runner:
            res = tune(_graph(), "llvm", trials=8, tuner="random", log=str(log), builder=builder,
                       runner=runner, batch_size=4)
        recs = Database(log).records()
        assert len(recs) == 8 and len({r.config_index for r in recs}) == 8
        assert all(r.ok for r in recs), [r.error_msg for r in recs]
        assert runner.retried >= 1 and any(x.startswith(victim) for x in runner.lost), runner.lost
        assert runner.counts[victim] == 1  # its first candidate; the second was moved
        assert runner.counts[f"127.0.0.1:{rpc.server_ports[0]}"] == 7
        assert res[0].measured == 8 and not res[0].errors
    finally:
        rpc.close()


def test_when_every_server_is_gone_tuning_stops_with_one_line_and_keeps_what_it_measured(tmp_path, builder):
    _tracker_or_skip()
    rpc = start_local_rpc("tefuse-gone", servers=1)
    calls = []

    def progress(name, done, budget, best):
        calls.append(done)
        if done >= 2:
            rpc.kill_server(0)

    try:
        runner = RPCRunner(key="tefuse-gone", tracker=rpc.tracker_address, min_repeat_ms=1, reacquire_timeout=1)
        log = tmp_path / "gone.jsonl"
        with runner, pytest.raises(DevicesLost) as err:
            tune(_graph(), "llvm", trials=6, tuner="random", log=str(log), builder=builder, runner=runner,
                 batch_size=2, progress=progress)
        msg = str(err.value)
        assert "\n" not in msg and msg.startswith("all 1 RPC servers are gone"), msg
        recs = Database(log).records()
        assert len(recs) == 2 and all(r.ok for r in recs)  # the first batch, written before
    finally:
        rpc.close()


def test_rpc_runner_reports_an_unreachable_server_in_one_line(tmp_path):
    import multiprocessing

    before = {c.pid for c in multiprocessing.active_children()}
    runner = RPCRunner(key="x", server=("127.0.0.1", 1), acquire_timeout=2)
    for _ in range(2):  # each try's measuring process is ended with it
        with pytest.raises(DevicesLost, match=r"cannot reach the RPC server at 127\.0\.0\.1:1") as err:
            runner.run(RunSpec("k", [], []), "llvm", [BuildResult(0, {}, str(tmp_path / "a.so"))])
        assert "\n" not in str(err.value)
    time.sleep(0.5)
    assert {c.pid for c in multiprocessing.active_children()} <= before


def test_rpc_runner_needs_an_address():
    with pytest.raises(ValueError):
        RPCRunner(key="x")


def test_cli_rpc_without_a_key_is_refused(tmp_path, capsys):
    assert main(["tune", "conv2d(k=8)+relu", "--input", "1x8x8x8", "--rpc", "127.0.0.1:9190",
                 "--log", str(tmp_path / "x.jsonl")]) == 2
    assert "--rpc needs --key" in capsys.readouterr().err


# -- local devices ------------------------------------------------------------------------
def test_cli_devices_spread_a_batch_over_local_worker_processes(tmp_path, capsys):
    log = tmp_path / "devices.jsonl"
    assert main(["tune", "conv2d(k=8,r=3,pad=1)+bias+relu", "--input", "1x8x10x10", "-t", "llvm",
                 "--trials", "6", "--tuner", "random", "--log", str(log), "-j", "2", "--no-progress",
                 "--devices", "0,1"]) == 0
    out = capsys.readouterr().out
    counts = dict(re.findall(r"(cpu:\d) (\d+)", out.split("measured on 2 device(s):")[1]))
    assert set(counts) == {"cpu:0", "cpu:1"} and all(int(n) > 0 for n in counts.values()), out
    recs = Database(log).records()
    assert len(recs) == 6 and all(r.ok for r in recs)


def test_pinning_names_only_the_chosen_gpu(monkeypatch):
    from tefuse.tune import runner as r

    monkeypatch.setattr(r, "_warm", lambda: True)
    monkeypatch.setattr(r, "_STATE", {})
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6")
    r._pin("cuda", 1)
    assert r.os.environ["CUDA_VISIBLE_DEVICES"] == "5" and r._STATE["index"] == 0
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    r._pin("cuda", 3)
    assert r.os.environ["CUDA_VISIBLE_DEVICES"] == "3"
    with pytest.raises(RuntimeError, match="only 1 visible"):
        r._pin("cuda", 1)


# -- the parallel runner's bookkeeping, with stand-in devices --------------------------------
class FakeSlot(Slot):
    def __init__(self, name, die_at=None, comes_back=False):
        self.name, self.die_at, self.comes_back, self.n = name, die_at, comes_back, 0

    def measure(self, spec, kind, build, reference):
        time.sleep(0.02)  # a device takes a while: every slot gets work
        self.n += 1
        if self.die_at is not None and self.n >= self.die_at:
            raise DeviceLost(f"{self.name} went away")
        return MeasureResult(build.index, build.config, costs=[1e-3 * (build.index + 1)])

    def reacquire(self):
        if self.comes_back:
            self.die_at = None
            return True
        return False


def _builds(n):
    return [BuildResult(i, {"i": i}, f"/x/{i}.so") for i in range(n)]


def test_results_keep_the_batch_order_and_build_errors_pass_through():
    runner = ParallelRunner(lambda: [FakeSlot("a"), FakeSlot("b")])
    builds = _builds(6)
    builds[2] = BuildResult(2, {"i": 2}, None, "compile_error", "nope")
    out = runner.run(RunSpec("k", [], []), "llvm", builds)
    assert [m.index for m in out] == list(range(6))
    assert out[2].error == "compile_error" and all(m.ok for k, m in enumerate(out) if k != 2)
    assert sum(runner.counts.values()) == 5
    assert set(runner.busy) == set(runner.counts) and all(v >= 0.02 * runner.counts[k] for k, v in runner.busy.items())


def test_slots_measure_with_a_short_gil_switch_interval_restored_after():
    """Each RPC call gives the GIL back and waits for it on return: under the default 5 ms
    interval, beside busy tuner threads, a slot waited that long for each (gil.py)."""
    import sys

    from tefuse.gil import BUILD_SWITCH_INTERVAL

    seen = []

    class Recording(FakeSlot):
        def measure(self, spec, kind, build, reference):
            seen.append(sys.getswitchinterval())
            return super().measure(spec, kind, build, reference)

    before = sys.getswitchinterval()
    assert before > BUILD_SWITCH_INTERVAL
    ParallelRunner(lambda: [Recording("a"), Recording("b")]).run(RunSpec("k", [], []), "llvm", _builds(4))
    assert seen and all(v == pytest.approx(BUILD_SWITCH_INTERVAL) for v in seen)
    assert sys.getswitchinterval() == before


def test_a_lost_candidate_is_retried_elsewhere_then_given_up():
    runner = ParallelRunner(lambda: [FakeSlot("a"), FakeSlot("b", die_at=2)])
    out = runner.run(RunSpec("k", [], []), "llvm", _builds(8))
    assert all(m.ok for m in out) and runner.retried == 1 and runner.counts["b"] == 1
    # a candidate that loses its device on every slot it tries is recorded, not retried forever
    runner = ParallelRunner(lambda: [FakeSlot("a", die_at=1, comes_back=True),
                                     FakeSlot("b", die_at=1, comes_back=True)], max_attempts=2)
    out = runner.run(RunSpec("k", [], []), "llvm", _builds(1))
    assert out[0].error == "runtime_error" and "lost while measuring it on" in out[0].error_msg


def test_all_devices_lost_raises_with_the_partial_batch():
    runner = ParallelRunner(lambda: [FakeSlot("a", die_at=3)])
    with pytest.raises(DevicesLost) as err:
        runner.run(RunSpec("k", [], []), "llvm", _builds(5))
    assert [m.index for m in err.value.partial] == [0, 1]
    assert "a: a went away" in str(err.value)


def test_a_server_that_stops_answering_counts_as_lost(monkeypatch):
    from tefuse.tune.measure import RunOptions

    slot = RPCSlot(RunOptions(), "k", None, ("127.0.0.1", 1), timeout=0.2)
    release = threading.Event()
    monkeypatch.setattr(RPCSlot, "_measure", lambda *a: release.wait(5))
    t0 = time.monotonic()
    with pytest.raises(DeviceLost, match="no answer in 0.2s"):
        slot.measure(RunSpec("k", [], []), "llvm", _builds(1)[0], None)
    assert time.monotonic() - t0 < 2
    release.set()


def test_a_session_that_cannot_start_cuda_says_how_to_start_the_server(monkeypatch):
    """A server whose process initialised CUDA before forking (TVM's FFI imports PyTorch) fails
    every session; the loss names the environment that avoids it."""
    from tefuse.tune.measure import RunOptions

    slot = RPCSlot(RunOptions(), "k", None, ("127.0.0.1", 1), timeout=None)
    slot.sess = object()

    def inputs(*a):
        raise RuntimeError("Traceback ...\nCUDA Runtime Error: cudaErrorInitializationError (3): initialization error")

    monkeypatch.setattr(RPCSlot, "_inputs", inputs)
    monkeypatch.setattr(RPCSlot, "_drop", lambda self: setattr(self, "sess", None))
    with pytest.raises(DeviceLost, match="TVM_FFI_DISABLE_TORCH_C_DLPACK=1") as e:
        slot.measure(RunSpec("k", [], []), "cuda", _builds(1)[0], None)
    assert "\n" not in str(e.value) and "cudaErrorInitializationError" in str(e.value)
