"""bench/timing.time_graph against a stand-in torch (its timings need a GPU): how many calls each
graph captures and what one call's time is divided by."""
from __future__ import annotations

import sys
import types

import pytest

from tefuse.bench import timing


def _fake_torch(elapsed_ms: float, log: list):
    """A torch whose CUDA graph records the calls made while capturing and whose events report
    `elapsed_ms` between a start and an end."""
    class Graph:
        pass

    class Capture:
        def __init__(self, g):
            pass

        def __enter__(self):
            log.append("capture")

        def __exit__(self, *exc):
            log.append("end")

    class Event:
        def __init__(self, enable_timing=False):
            pass

        def record(self):
            pass

        def elapsed_time(self, other):
            return elapsed_ms

    Graph.replay = lambda self: log.append("replay")
    cuda = types.SimpleNamespace(CUDAGraph=Graph, graph=Capture, Event=Event, synchronize=lambda: None)

    class NoGrad:
        def __enter__(self):
            pass

        def __exit__(self, *exc):
            pass

    return types.SimpleNamespace(cuda=cuda, no_grad=NoGrad)


@pytest.mark.parametrize("calls", [1, 10])
def test_a_graph_captures_graph_calls_calls_and_the_time_is_per_call(monkeypatch, calls):
    log = []
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(20.0, log))
    monkeypatch.setattr(timing, "GRAPH_CALLS", 1)
    timing.set_graph_calls(calls)

    def fn():
        log.append("call")

    ms = timing.time_graph(fn, repeat=3, inner=4)
    captured = log[log.index("capture") + 1:log.index("end")]
    assert captured == ["call"] * calls  # warm-up calls come before the capture
    assert log[:3] == ["call"] * 3
    assert log.count("replay") == 3 * 4
    assert ms == pytest.approx(20.0 / (4 * calls))


def test_an_explicit_count_overrides_the_setting(monkeypatch):
    log = []
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(12.0, log))
    monkeypatch.setattr(timing, "GRAPH_CALLS", 10)
    ms = timing.time_graph(lambda: log.append("call"), repeat=1, inner=2, calls=3)
    assert log[log.index("capture") + 1:log.index("end")] == ["call"] * 3
    assert ms == pytest.approx(12.0 / (2 * 3))


def test_graph_calls_below_one_are_refused(monkeypatch):
    monkeypatch.setattr(timing, "GRAPH_CALLS", 1)
    with pytest.raises(ValueError, match="1 or more"):
        timing.set_graph_calls(0)
    assert timing.GRAPH_CALLS == 1
    with pytest.raises(ValueError, match="1 or more"):
        timing.time_graph(lambda: None, calls=-1)


def test_the_precision_bench_takes_graph_calls_and_records_them(monkeypatch, tmp_path, capsys):
    from tefuse.bench import precision

    monkeypatch.setattr(timing, "GRAPH_CALLS", 1)
    monkeypatch.setattr(precision, "run_suites", lambda args, db, tuning, attempt: None)
    out = tmp_path / "b.json"
    assert precision.main(["conv", "--graph-calls", "8", "--json", str(out)]) == 0
    import json

    assert json.loads(out.read_text())["timing"] == {"graph_calls": 8}
    with pytest.raises(SystemExit):
        precision.main(["conv", "--graph-calls", "0"])
    assert "must be 1 or more" in capsys.readouterr().err


def test_kernel_profile_names_each_kernels_config_source():
    """A profile row carries where its kernel's config came from, and the counts add up to the
    build's kernels: a slow fallback kernel reads apart from a slow tuned one."""
    def kernel(name, source):
        return types.SimpleNamespace(group=types.SimpleNamespace(name=name), template="wgmma_gemm",
                                     config_source=source)

    ks = [kernel("g1", "tuned"), kernel("g2", "fallback"), kernel("g3", "tuned")]
    rows = timing.kernel_profile(ks, [1e-4, 3e-4, 2e-4])
    assert [r[0] for r in rows] == ["g2", "g3", "g1"]
    assert [r[3] for r in rows] == ["fallback", "tuned", "tuned"]
    assert rows[0][2] == 0.3
    assert timing.config_sources(ks) == {"tuned": 2, "fallback": 1}


def _hold_turn(path: str, seconds: float, q) -> None:
    """A run's timing turn: when it started and ended, as the lock let it."""
    import time

    timing.set_gpu_turn(path)
    with timing.gpu_turn():
        start = time.monotonic()
        time.sleep(seconds)
        q.put((start, time.monotonic()))


def _turns(path, runs: int, seconds: float) -> list[tuple[float, float]]:
    """The (start, end) of `runs` processes' turns, each `seconds` long, in order of start."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    q = ctx.Queue()
    procs = [ctx.Process(target=_hold_turn, args=(path, seconds, q)) for _ in range(runs)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    return sorted(q.get(timeout=5) for _ in procs)


def test_runs_sharing_a_gpu_turn_time_one_at_a_time(tmp_path):
    turns = _turns(str(tmp_path / "gpu.lock"), 3, 0.3)
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(turns, turns[1:])), turns


def test_without_a_gpu_turn_timings_overlap():
    """The control: the same runs without the lock overlap (the test above can fail)."""
    turns = _turns(None, 3, 1.0)
    assert any(a_end > b_start for (_, a_end), (b_start, _) in zip(turns, turns[1:]))


def test_a_crashed_run_leaves_the_turn_free(tmp_path):
    """flock dies with its process: a run killed in its turn blocks no one after it."""
    import multiprocessing as mp
    import os
    import signal

    path = str(tmp_path / "gpu.lock")
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    stuck = ctx.Process(target=_hold_turn, args=(path, 60, q))
    stuck.start()
    import time

    deadline = time.monotonic() + 10
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    os.kill(stuck.pid, signal.SIGKILL)
    stuck.join(10)
    after = ctx.Process(target=_hold_turn, args=(path, 0.0, q))
    after.start()
    after.join(10)
    assert after.exitcode == 0 and q.get(timeout=5)
