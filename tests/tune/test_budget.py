"""The budgeted loop on fake builds and measurements (no worker processes): a rerun starts each
kernel from its records and measures no config twice."""
from __future__ import annotations

import json
import time

import numpy as np

from tefuse import GraphBuilder
from tefuse.tune.budget import tune_within
from tefuse.tune.database import Database
from tefuse.tune.measure import BuildResult, MeasureResult
from tefuse.tune.scheduler import SchedulerSettings
from tefuse.tune.task import as_tasks


def _keys(recs) -> list:
    return [(r.workload, r.template, json.dumps(r.config, sort_keys=True)) for r in recs]


class FakeBuilder:
    n_parallel = 2

    def build(self, task, template, configs):
        return [BuildResult(c.index, c.to_json(), f"/x/{c.index}.so") for c in configs]

    def close(self) -> None:
        pass


class FakeRunner:
    """Cost grows with the index; every candidate counted, to find one measured twice."""

    def __init__(self) -> None:
        self.seen: list = []

    def run(self, spec, kind, builds, reference=None):
        self.seen += [(spec.key, json.dumps(b.config, sort_keys=True)) for b in builds]
        time.sleep(0.03 * len(builds))  # the budget ends before the spaces (16 configs each) do
        return [MeasureResult(b.index, b.config, costs=[1e-4 * (b.index + 1)]) for b in builds]

    def close(self) -> None:
        pass


def test_a_resumed_budget_run_starts_each_kernel_from_its_records(tmp_path):
    b = GraphBuilder()
    x = b.input("x", (1, 4, 8, 8))
    y = b.relu(b.conv2d(x, b.const(np.ones((4, 4, 3, 3), "float32")), padding=1))
    y = b.sigmoid(b.conv2d(y, b.const(np.ones((8, 4, 1, 1), "float32"))))
    tasks = as_tasks(b.build(y), "llvm")
    log = tmp_path / "fake.jsonl"
    settings = SchedulerSettings(round_trials=4, warmup_trials=2, patience=1000)
    runner = FakeRunner()

    def once(seconds):
        rounds = []
        return tune_within(tasks, seconds=seconds, tuner="random", log=str(log), builder=FakeBuilder(),
                           runner=runner, settings=settings, on_round=rounds.append), rounds

    # a process's first budget run pays one-time costs inside its clock (under a loaded CI machine,
    # once all of its 0.4 s): paid here, on a log and runner of their own
    tune_within(tasks, seconds=0.1, tuner="random", log=str(tmp_path / "warm.jsonl"), builder=FakeBuilder(),
                runner=FakeRunner(), settings=settings)
    first, _ = once(0.4)
    n1 = len(Database(log).records())
    assert {t.name for t in first.tasks if t.trials} == {t.name for t in tasks} and n1 > 0
    second, rounds = once(0.4)
    recs = Database(log).records()
    # every kernel started from its records: no warm-up round, its trial count from the log
    assert rounds and not any(r.warmup for r in rounds)
    assert sum(t.trials for t in second.tasks) == len(recs) > n1
    assert sum(r.resumed for r in second.results) == n1
    assert len(set(_keys(recs))) == len(recs) and len(set(runner.seen)) == len(runner.seen)
