"""The budget scheduler's policy on fake kernels and a fake clock: rounds go where the model's
time is expected to fall most, a converged kernel gets none, and the budget is kept."""
from __future__ import annotations

import math

import pytest

from tefuse.tune.scheduler import Round, SchedulerSettings, TaskScheduler, TaskStats, stats_from_costs


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class FakeKernel:
    """A kernel whose best cost after n trials is floor + (start - floor) * decay**n."""

    def __init__(self, start: float, floor: float, decay: float) -> None:
        self.start, self.floor, self.decay, self.trials = start, floor, decay, 0

    def run(self, trials: int) -> float:
        self.trials += trials
        return self.floor + (self.start - self.floor) * self.decay ** self.trials


def _simulate(kernels, stats, settings, budget, seconds_per_trial=0.1, exhausted=lambda i: False):
    clock = FakeClock()
    sched = TaskScheduler(stats, settings, budget=budget, clock=clock)
    rounds: list[Round] = []
    while (rnd := sched.next_round()) is not None:
        best = kernels[rnd.task].run(rnd.trials)
        clock.now += rnd.trials * seconds_per_trial
        sched.finish(rnd, rnd.trials, best, rnd.trials * seconds_per_trial, exhausted(rnd.task))
        rounds.append(rnd)
    return sched, rounds, clock


@pytest.mark.parametrize("light, more", [((1e-3, 9.9e-4, 0.5), 3.0), ((1e-3, 8e-4, 0.98), 1.2)])
def test_warm_up_first_then_the_heavier_improving_kernel_gets_more_rounds(light, more):
    settings = SchedulerSettings(round_trials=8, warmup_trials=4, patience=16)
    # kernel 0 runs 4 times a model run and keeps improving; kernel 1 once, and improves less
    # (flat from the start, or towards a floor 8x higher)
    kernels = [FakeKernel(1e-3, 1e-4, 0.97), FakeKernel(*light)]
    stats = [TaskStats("heavy", weight=4), TaskStats("light", weight=1)]
    sched, rounds, _ = _simulate(kernels, stats, settings, budget=20.0)
    assert [(r.task, r.warmup, r.trials) for r in rounds[:2]] == [(0, True, 4), (1, True, 4)]
    given = [sum(r.trials for r in rounds if r.task == i) for i in range(2)]
    assert given[0] > more * given[1]
    assert all(not r.warmup for r in rounds[2:])


def test_a_converged_kernel_stops_receiving_rounds():
    settings = SchedulerSettings(round_trials=4, warmup_trials=4, patience=12, min_gain=0.01)
    kernels = [FakeKernel(1e-3, 1e-3, 0.5), FakeKernel(1e-3, 1e-4, 0.99)]  # 0: never improves
    stats = [TaskStats("flat", weight=10), TaskStats("slow", weight=1)]
    sched, rounds, _ = _simulate(kernels, stats, settings, budget=30.0)
    flat = [k for k, r in enumerate(rounds) if r.task == 0]
    # the warm-up (its first best is an improvement), then rounds up to the patience, no more
    assert sum(rounds[k].trials for k in flat) == 4 + 12
    assert stats[0].converged and not stats[1].converged
    assert rounds[-1].task == 1 and len(rounds) > len(flat) + 3


def test_an_exhausted_space_ends_a_kernel_and_all_converged_ends_the_run():
    settings = SchedulerSettings(round_trials=4, warmup_trials=2)
    kernels = [FakeKernel(1e-3, 1e-4, 0.9), FakeKernel(1e-3, 1e-4, 0.9)]
    stats = [TaskStats("a"), TaskStats("b")]
    sched, rounds, clock = _simulate(kernels, stats, settings, budget=1e6, exhausted=lambda i: True)
    assert [r.task for r in rounds] == [0, 1] and sched.done() and clock.now < 1.0


def test_the_budget_is_kept_with_a_fake_clock_and_the_last_round_shrinks_to_fit():
    settings = SchedulerSettings(round_trials=16, warmup_trials=8, patience=10_000)
    kernels = [FakeKernel(1e-3, 1e-5, 0.95) for _ in range(3)]
    stats = [TaskStats(f"k{i}", weight=i + 1) for i in range(3)]
    sched, rounds, clock = _simulate(kernels, stats, settings, budget=9.0, seconds_per_trial=0.25)
    assert clock.now <= 9.0 and clock.now > 9.0 - 0.25
    # 36 trials fit: 3 warm-ups of 8, then 12 of a 16-trial round
    assert rounds[-1].trials == 12 and sum(r.trials for r in rounds) == 36
    assert sched.done() and sched.time_left() <= 0.25


def test_a_similar_faster_kernel_makes_a_slow_one_worth_tuning():
    """The optimistic bound: a kernel far from the throughput its group reached has much to gain."""
    settings = SchedulerSettings()
    fast = TaskStats("fast", flops=1e6, group="conv2d/x", best=1e-4, rounds=3, history=[1e-4] * 3)
    slow = TaskStats("slow", flops=1e6, group="conv2d/x", best=1e-2, rounds=3, history=[1e-2] * 3)
    alone = TaskStats("alone", flops=1e6, group="dense/y", best=1e-2, rounds=3, history=[1e-2] * 3)
    sched = TaskScheduler([fast, slow, alone], settings)
    # slow's bound is 2 x 1e-4: almost all of 1e-2 could go; alone's guess is best / rounds
    assert sched.gain(1) == pytest.approx(0.8 * (1e-2 - 2e-4))
    assert sched.gain(2) == pytest.approx(0.8 * 1e-2 / 3)
    assert sched.next_round().task == 1


def test_stats_from_the_log_resume_best_trials_and_stall():
    settings = SchedulerSettings(round_trials=4, warmup_trials=2, patience=4)
    s = stats_from_costs("k", [3.0, math.inf, 2.0, 2.0, 2.0, 2.0, 1.999], settings, weight=2)
    # rounds as a run with these sizes makes them: 2 trials, 4, and the one left
    assert (s.best, s.trials, s.rounds, s.trials_since_best) == (1.999, 7, 3, 4)
    assert s.history == [3.0, 2.0, 1.999]
    sched = TaskScheduler([s, TaskStats("new")], settings, budget=100.0, clock=FakeClock())
    assert s.converged  # 4 trials without a 1% gain: resumed as converged
    assert sched.next_round().task == 1 and sched.model_time() == math.inf
