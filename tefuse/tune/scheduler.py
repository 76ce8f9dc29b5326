"""Which kernel gets the next round of trials when a whole model is tuned within a time budget.

Ansor's gradient-based task scheduler: a model's time is sum(weight_i * best_i) over its kernels
(weight: calls per model run), so the next round goes to the kernel whose round is expected to
cut that sum the most. The expected cut of kernel i is

    weight_i * (alpha * backward_i + (1 - alpha) * forward_i)

backward: how much its best fell per round over the last `window` rounds (its recent slope);
forward: an optimistic guess of the next round's gain, the larger of best/rounds (gains shrink
as rounds add up) and the distance to `beta` times the time it would take at the throughput the
fastest similar kernel (same op and template kind) reached. Every kernel first gets one small
warm-up round, so that each has a best to start from. A kernel converges, and gets no more
rounds, after `patience` trials without improving by `min_gain`, or when its space is used up.

The policy only: it knows no builder, runner or log (tune/budget.py drives it), and takes a
clock, so that tests can run it on fake time.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence


@dataclass(frozen=True)
class SchedulerSettings:
    """The policy's knobs; the defaults are Ansor's alpha, beta and window."""

    round_trials: int = 16  # trials in a round after the warm-up
    warmup_trials: int = 8  # trials in each kernel's first round
    alpha: float = 0.2  # weight of the recent slope against the optimistic forward guess
    beta: float = 2.0  # how far from the best similar kernel's throughput still counts as reachable
    window: int = 3  # rounds the recent slope is taken over
    patience: int = 64  # trials without improvement after which a kernel has converged
    min_gain: float = 0.01  # a best improved by less than this fraction is no improvement

    def __post_init__(self) -> None:
        if self.round_trials < 1 or self.warmup_trials < 1 or self.window < 1 or self.patience < 1:
            raise ValueError(f"scheduler settings must be positive: {self}")


@dataclass
class TaskStats:
    """What the scheduler knows of one kernel: its weight in the model, its progress so far
    (from this run and from the log of earlier ones), and whether it can take more rounds."""

    name: str
    weight: float = 1.0  # calls per model run
    flops: float = 0.0  # work of one call; 0: unknown (no optimistic bound from similar kernels)
    group: str = ""  # kernels of one group are similar (same op and template kind)
    best: float = math.inf  # best cost so far, seconds
    trials: int = 0
    rounds: int = 0
    trials_since_best: int = 0
    seconds: float = 0.0  # tuning time this run has spent on it
    measured: int = 0  # trials this run measured (what `seconds` bought)
    history: list[float] = field(default_factory=list)  # best after each round
    exhausted: bool = False  # every config of its space measured
    converged: bool = False  # exhausted, or stalled for `patience` trials: no more rounds
    busy: bool = False  # a round is in flight

    def seconds_per_trial(self) -> Optional[float]:
        return self.seconds / self.measured if self.measured else None


@dataclass(frozen=True)
class Round:
    """Trials to give one kernel now; `gain`: the expected cut of the model's time, seconds."""

    task: int
    trials: int
    warmup: bool
    gain: float


def stats_from_costs(name: str, costs: Sequence[float], settings: SchedulerSettings, *, weight: float = 1.0,
                     flops: float = 0.0, group: str = "") -> TaskStats:
    """A kernel's stats from the costs its earlier trials measured, in the order they were
    measured (inf for failures): its best, trial count and stall, and its per-round history as
    if those trials had come in rounds of `settings`' sizes."""
    s = TaskStats(name, weight, flops, group)
    best, stall, size = math.inf, 0, settings.warmup_trials
    for k, c in enumerate(costs, 1):
        if _improves(c, best, settings.min_gain):
            stall = 0
        else:
            stall += 1
        best = min(best, c)
        if k == size or k == len(costs):
            s.history.append(best)
            size += settings.round_trials
    s.best, s.trials, s.rounds, s.trials_since_best = best, len(costs), len(s.history), stall
    return s


def _improves(cost: float, best: float, min_gain: float) -> bool:
    if not math.isfinite(cost):
        return False
    return not math.isfinite(best) or cost < best * (1 - min_gain)


class TaskScheduler:
    """Hands out rounds by expected gain until the budget is spent or every kernel converged.

    `budget` is seconds of wall time from construction (None: no limit; rounds go on until
    every kernel converges). A round starts only when its estimated length (seconds per trial so
    far, this kernel's or else all kernels') fits in the time left; the last one shrinks to fit.
    """

    def __init__(self, tasks: Sequence[TaskStats], settings: SchedulerSettings = SchedulerSettings(),
                 budget: Optional[float] = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.tasks, self.settings, self.budget, self.clock = list(tasks), settings, budget, clock
        self.start = clock()
        for t in self.tasks:
            self._update_convergence(t)

    # -- time ---------------------------------------------------------------------------------
    def elapsed(self) -> float:
        return self.clock() - self.start

    def time_left(self) -> float:
        return math.inf if self.budget is None else self.budget - self.elapsed()

    def _seconds_per_trial(self, t: TaskStats) -> Optional[float]:
        own = t.seconds_per_trial()
        if own is not None:
            return own
        measured = sum(u.measured for u in self.tasks)
        return sum(u.seconds for u in self.tasks) / measured if measured else None

    # -- the policy ---------------------------------------------------------------------------
    def model_time(self) -> float:
        """sum(weight * best): the model's time by the best records (inf while one has none)."""
        return sum(t.weight * t.best for t in self.tasks)

    def gain(self, i: int) -> float:
        """Expected cut of the model's time (seconds per run) from one more round of task i."""
        t, s = self.tasks[i], self.settings
        if not math.isfinite(t.best):  # nothing valid yet: any valid config is a gain
            return math.inf
        h = t.history
        backward = (h[-1 - s.window] - h[-1]) / s.window if len(h) > s.window else 0.0
        if not math.isfinite(backward):
            backward = 0.0
        forward = t.best / max(t.rounds, 1)
        bound = self._optimistic_cost(t)
        if bound is not None:
            forward = max(forward, t.best - bound)
        return t.weight * (s.alpha * backward + (1 - s.alpha) * forward)

    def _optimistic_cost(self, t: TaskStats) -> Optional[float]:
        """beta times t's cost at the best throughput a similar kernel reached (None without one)."""
        if t.flops <= 0 or not t.group:
            return None
        rates = [u.flops / u.best for u in self.tasks
                 if u is not t and u.group == t.group and u.flops > 0 and math.isfinite(u.best) and u.best > 0]
        return self.settings.beta * t.flops / max(rates) if rates else None

    def done(self) -> bool:
        """No round will start any more: out of time, or every kernel converged (none in flight)."""
        if self.time_left() <= 0:
            return True
        return all(t.converged for t in self.tasks)

    def next_round(self) -> Optional[Round]:
        """The round to start now (the kernel is marked busy until `finish`), or None: nothing
        fits now (see `done` for whether anything will)."""
        if self.done():
            return None
        free = [i for i, t in enumerate(self.tasks) if not t.busy and not t.converged]
        warm = [i for i in free if self.tasks[i].rounds == 0]
        if warm:
            i, trials, warmup = warm[0], self.settings.warmup_trials, True
        elif free:
            gains = {i: self.gain(i) for i in free}
            i = max(free, key=lambda k: (gains[k], -k))  # the first of equals
            trials, warmup = self.settings.round_trials, False
        else:
            return None
        per_trial = self._seconds_per_trial(self.tasks[i])
        if per_trial is not None and per_trial > 0:
            fits = int(self.time_left() / per_trial)
            if fits < 1:
                return None
            trials = min(trials, fits)
        self.tasks[i].busy = True
        return Round(i, trials, warmup, self.gain(i))

    def finish(self, rnd: Round, measured: int, best: float, seconds: float, exhausted: bool = False) -> None:
        """A round ended: `measured` trials in `seconds`, the kernel's best now `best`;
        `exhausted`: its space has nothing left to measure."""
        t = self.tasks[rnd.task]
        t.busy = False
        t.seconds += seconds
        t.exhausted = t.exhausted or exhausted
        if not measured:  # stopped before its first batch (out of time): no round
            self._update_convergence(t)
            return
        if _improves(best, t.best, self.settings.min_gain):
            t.trials_since_best = 0
        else:
            t.trials_since_best += measured
        t.best = min(t.best, best)
        t.trials += measured
        t.measured += measured
        t.rounds += 1
        t.history.append(t.best)
        self._update_convergence(t)

    def _update_convergence(self, t: TaskStats) -> None:
        t.converged = t.exhausted or t.trials_since_best >= self.settings.patience
