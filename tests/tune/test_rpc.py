"""Measuring through TVM's RPC on loopback (127.0.0.1 only), llvm target."""
from __future__ import annotations

import numpy as np
import pytest

from tefuse import GraphBuilder
from tefuse.tune.builder import LocalBuilder
from tefuse.tune.database import Database
from tefuse.tune.rpc import RPCRunner, start_local_rpc
from tefuse.tune.loop import tune


def _graph():
    b = GraphBuilder()
    x = b.input("x", (1, 4, 8, 8))
    y = b.relu(b.conv2d(x, b.const(np.ones((4, 4, 3, 3), "float32")), padding=1))
    return b.build(y)


@pytest.mark.parametrize("with_tracker", [False, True], ids=["server", "tracker"])
def test_tune_through_rpc_on_loopback(tmp_path, with_tracker):
    if with_tracker:
        pytest.importorskip("tornado", reason="TVM's RPC tracker needs tornado")
    rpc = start_local_rpc("tefuse-test", with_tracker=with_tracker)
    try:
        if with_tracker:
            runner = RPCRunner(key="tefuse-test", tracker=("127.0.0.1", rpc.tracker_port), min_repeat_ms=1)
        else:
            runner = RPCRunner(key="tefuse-test", server=("127.0.0.1", rpc.server_port), min_repeat_ms=1)
        log = tmp_path / "rpc.jsonl"
        with LocalBuilder(n_parallel=2) as builder:
            res = tune(_graph(), "llvm", trials=3, tuner="random", log=str(log), builder=builder, runner=runner)
        recs = Database(log).records()
        assert len(recs) == 3
        assert all(r.ok for r in recs), [r.error_msg for r in recs]
        assert all(r.device.startswith("rpc:") for r in recs)
        assert res[0].best_cost > 0
    finally:
        rpc.close()


def test_rpc_runner_reports_an_unreachable_server_as_runtime_error(tmp_path):
    from tefuse.tune.measure import BuildResult, RunSpec

    runner = RPCRunner(key="x", server=("127.0.0.1", 1))
    res = runner.run(RunSpec("k", [], []), "llvm", [BuildResult(0, {}, str(tmp_path / "a.so"))])
    assert res[0].error == "runtime_error" and res[0].error_msg.startswith("rpc:")


def test_rpc_runner_needs_an_address():
    with pytest.raises(ValueError):
        RPCRunner(key="x")
