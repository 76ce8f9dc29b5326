"""Tuning a whole model within a wall-clock budget: rounds of trials handed out by the task
scheduler (tune/scheduler.py), each kernel's search kept from round to round.

Every batch is appended to the log as soon as it is measured (as `tune` does), so the budget
ending, an error or Ctrl-C loses at most the batch in flight; no batch starts after the deadline.
Rerun with the same log, each kernel starts from its records: its best, its trial count and its
recent progress come from the log, and no config it holds is measured again.
"""
from __future__ import annotations

import logging
import math
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Union

from .builder import LocalBuilder
from .loop import in_threads, open_tuning, prepare_checks, workers_shape
from .measure import COMPILE_ERROR
from .runner import LocalRunner
from .scheduler import Round, SchedulerSettings, TaskScheduler, TaskStats, stats_from_costs
from .search import DB, TemplateSearch, TuneResult, TuningSession, own_records
from .task import Task
from ..options import BuildOptions

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RoundReport:
    """One finished round, for progress displays."""

    number: int  # rounds finished so far in this run, this one included
    task: str
    task_index: int  # 0-based, of `tasks`
    tasks: int
    template: str
    trials: int  # measured in this round
    warmup: bool
    best: float  # the kernel's best cost now, seconds
    model_time: float  # sum(weight * best) over the kernels, seconds (inf while one has none)
    elapsed: float
    time_left: float


@dataclass
class BudgetReport:
    """What a budgeted run did: its rounds, why it stopped, and per kernel and template the
    results `tune` returns."""

    budget: float  # seconds
    elapsed: float  # from the start (the workers up) to the end of the last round
    startup: float  # seconds the build and measuring workers took to start (not in the budget)
    rounds: int
    stopped: str  # "budget", "converged" (every kernel) or "stopped" (an error or Ctrl-C)
    tasks: list[TaskStats]
    results: list[TuneResult]
    model_time_before: float = math.inf  # sum(weight * best) by the log before this run
    errors: dict[str, int] = field(default_factory=dict)  # this run's failed trials by kind

    @property
    def model_time_after(self) -> float:
        """sum(weight * best) by the log after this run."""
        return sum(t.weight * t.best for t in self.tasks)

    @property
    def measured(self) -> int:
        return sum(r.measured for r in self.results)

    @property
    def compile_error_rate(self) -> float:
        return self.errors.get(COMPILE_ERROR, 0) / self.measured if self.measured else 0.0


class KernelSearch:
    """A kernel's templates' searches, and which of them a round goes to: in the warm-up round
    each template a share (the first template's first trial is the untuned config); after it,
    the template that leads, as `tune` gives the rest of a budget to it."""

    def __init__(self, session: TuningSession, task: Task, spaces: dict, prefix: str) -> None:
        self.task, self.prefix = task, prefix
        self.searches: list[TemplateSearch] = []
        reference = None
        for name, space in spaces.items():
            self.searches.append(TemplateSearch(session, task, name, space, prefix, reference))
        self.lead = self.searches[0] if self.searches else None

    def costs_in_log(self, db: DB) -> list[float]:
        """Median costs of this kernel's records of its tuned templates, in the log's order."""
        names = {s.template for s in self.searches}
        return [r.median_cost for r in own_records(db, self.task) if r.template in names]

    @property
    def best(self) -> float:
        return min((s.best_cost for s in self.searches), default=math.inf)

    def exhausted(self) -> bool:
        return all(s.exhausted() for s in self.searches)

    def run(self, rnd: Round) -> tuple[int, str]:
        """(trials measured, template of the last search run) for one round."""
        open_ = [s for s in self.searches if not s.exhausted()]
        if not open_:
            return 0, ""
        if rnd.warmup and len(open_) > 1:
            share, measured = max(1, rnd.trials // len(open_)), 0
            for s in open_:
                s.reference = s.reference or self._reference()
                measured += s.run(share)
            return measured, "+".join(s.template for s in open_)
        lead = min(open_, key=lambda s: s.best_cost)
        lead.reference = lead.reference or self._reference()
        return lead.run(rnd.trials), lead.template

    def _reference(self):
        return next((s.reference for s in self.searches if s.reference is not None), None)

    def outcomes(self) -> list[TuneResult]:
        return [s.outcome() for s in self.searches]


def kernel_group(task: Task) -> str:
    """Kernels the scheduler counts as similar: one op kind, one template."""
    tmpl = task.tunable()
    return f"{task.info.anchor_kind}/{tmpl[0].name if tmpl else ''}"


def tune_within(graph_or_tasks, target=None, *, seconds: float, tuner: str = "xgb",
                log: Union[None, str, os.PathLike, DB] = None, seed: int = 0,
                builder: Optional[LocalBuilder] = None, runner=None, batch_size: Optional[int] = None,
                transfer: bool = True, settings: Optional[SchedulerSettings] = None,
                on_round: Optional[Callable[[RoundReport], None]] = None, tuner_options: Optional[dict] = None,
                tasks_at_once: Optional[int] = None, only: Optional[dict] = None,
                options: Optional[BuildOptions] = None) -> BudgetReport:
    """Tune the kernels of a graph (or the Tasks given) for `seconds` of wall time in all,
    rounds going where the model's time is expected to fall most (TaskScheduler). The clock
    starts once the build and measuring workers are up (they import TVM: seconds that no
    budget should go to); reading the log, builds, measurements and the learning all count,
    and the batch in flight at the deadline is finished and logged. `tasks_at_once`, `only`, `options`,
    `builder`, `runner` and `log` are as for `tune`."""
    settings = settings or SchedulerSettings()
    tasks, narrowed, db = open_tuning(graph_or_tasks, target, options, only, log)
    own_builder, own_runner = builder is None, runner is None
    builder = builder or LocalBuilder()
    runner = runner or LocalRunner()
    try:
        runner, batch_size, at_once = workers_shape(tasks, builder, runner, batch_size, tasks_at_once)
        session = TuningSession(db, builder, runner, tuner, seed, batch_size, None, transfer, None,
                                dict(tuner_options or {}))
        t0 = time.monotonic()
        _warm(builder, runner, tasks[0].target.kind.name if tasks else "llvm")
        prepare_checks(runner, tasks)
        start = time.monotonic()
        startup = start - t0
        session.deadline = start + seconds
        kernels, stats = [], []
        for k, (task, (spaces, refusals)) in enumerate(zip(tasks, narrowed)):
            prefix = f"[task {k + 1}/{len(tasks)}] {task.name}"
            for why in refusals if not spaces else ():
                logging.getLogger(__name__).info("%s: not tuned: %s", prefix, why)
            kernel = KernelSearch(session, task, spaces, prefix)
            s = stats_from_costs(task.name, kernel.costs_in_log(db), settings, weight=task.weight,
                                 flops=task.flops(), group=kernel_group(task))
            s.exhausted = kernel.exhausted()
            if s.trials:
                logging.getLogger(__name__).info("%s: %d trial(s) in the log, best %s", prefix, s.trials,
                                                 _ms(s.best))
            kernels.append(kernel)
            stats.append(s)
        sched = TaskScheduler(stats, settings, budget=seconds - (time.monotonic() - start))
        before = sched.model_time()
        driver = _Driver(sched, kernels, session, on_round)

        def interrupted() -> None:
            builder.close()
            runner.close()

        try:
            in_threads(driver.worker, [() for _ in range(at_once)], at_once, session.stop, interrupted)
        finally:
            elapsed = time.monotonic() - start
        if session.stop.is_set():
            stopped = "stopped"
        elif all(t.converged for t in stats):
            stopped = "converged"
        else:
            stopped = "budget"
    finally:
        if own_builder:
            builder.close()
        if own_runner:
            runner.close()
    results = [r for k in kernels for r in k.outcomes()]
    errors: dict[str, int] = {}
    for r in results:
        for e, n in r.errors.items():
            errors[e] = errors.get(e, 0) + n
    return BudgetReport(seconds, elapsed, startup, driver.rounds, stopped, stats, results, before, errors)


def _warm(builder, runner, kind: str) -> None:
    """Start the build workers and the measuring process side by side, now: each imports TVM,
    which one after the other (at the first build, then the first measurement) took most of a
    small budget's first round."""
    warm = getattr(runner, "warm", None)
    thread = threading.Thread(target=warm, args=(kind,), daemon=True) if warm is not None else None
    if thread is not None:
        thread.start()
    try:
        if hasattr(builder, "warm"):
            builder.warm(kind)
    finally:
        if thread is not None:
            thread.join()


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.4f} ms" if math.isfinite(seconds) else "none yet"


class _Driver:
    """Worker threads' shared loop: take a round from the scheduler, run it, report it."""

    def __init__(self, sched: TaskScheduler, kernels: list[KernelSearch], session: TuningSession,
                 on_round: Optional[Callable[[RoundReport], None]]) -> None:
        self.sched, self.kernels, self.session, self.on_round = sched, kernels, session, on_round
        self.cond = threading.Condition()
        self.rounds = 0

    def _take(self) -> Optional[Round]:
        with self.cond:
            while not self.session.stop.is_set() and not self.sched.done():
                rnd = self.sched.next_round()
                if rnd is not None:
                    return rnd
                if not any(t.busy for t in self.sched.tasks):  # nothing fits, and nothing will
                    return None
                self.cond.wait(timeout=1.0)
            return None

    def worker(self) -> None:
        while (rnd := self._take()) is not None:
            kernel, t0 = self.kernels[rnd.task], time.monotonic()
            measured, template = 0, ""
            try:
                measured, template = kernel.run(rnd)
            finally:
                with self.cond:
                    self.sched.finish(rnd, measured, kernel.best, time.monotonic() - t0, kernel.exhausted())
                    self.rounds += bool(measured)
                    report = self._report(rnd, measured, template)
                    self.cond.notify_all()
            if measured:
                log.info("round %d%s: %s (x%g), %s: %d trial(s), best %s; model %s by the records; %.0fs left",
                         report.number, " (warm-up)" if rnd.warmup else "", report.task,
                         self.sched.tasks[rnd.task].weight, template or "-", measured, _ms(report.best),
                         _ms(report.model_time), max(report.time_left, 0))
                if self.on_round is not None:
                    self.on_round(report)

    def _report(self, rnd: Round, measured: int, template: str) -> RoundReport:
        t = self.sched.tasks[rnd.task]
        return RoundReport(self.rounds, t.name, rnd.task, len(self.kernels), template, measured, rnd.warmup,
                           t.best, self.sched.model_time(), self.sched.elapsed(), self.sched.time_left())
