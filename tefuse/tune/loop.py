"""The tuning loop: propose -> build (parallel) -> run (on one device, or spread over several) -> log -> learn.

(The search strategies that propose configs live in tune/tuners/; this module drives them.)

Every measurement becomes one TuningRecord appended to the log as soon as its batch is
done, so an interrupted run loses at most one batch, and a rerun resumes: configs already
in the log for the workload/template are not measured again and count toward the budget.
"""
from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Callable, Optional, Union

from .builder import LocalBuilder
from .measure import run_spec
from .runner import LocalRunner
from .search import DB, Progress, TemplateSearch, TuneResult, TuningSession, open_log
from .task import Task, as_tasks
from ..codegen.schedule import BestRecordSource, choose_schedule
from ..codegen.lower import lower_group
from ..options import BuildOptions
from ..schedules.space import KnobError

log = logging.getLogger(__name__)

__all__ = ["TuneResult", "TuningSession", "tune"]


def tune(graph_or_tasks, target=None, *, trials: int, tuner: str = "xgb",
         log: Union[None, str, os.PathLike, DB] = None, early_stopping: Optional[int] = None,
         seed: int = 0, builder: Optional[LocalBuilder] = None, runner=None,
         batch_size: Optional[int] = None, transfer: bool = True,
         progress: Optional[Progress] = None, tuner_options: Optional[dict] = None,
         tasks_at_once: Optional[int] = None, only: Optional[dict] = None,
         options: Optional[BuildOptions] = None, covered: Optional[BestRecordSource] = None) -> list[TuneResult]:
    """Tune every task (a Graph's fused groups, or given Tasks) for `trials` measurements each.

    `trials` is the budget per task: a few for each of its templates, the rest for the fastest
    of them (`template_budgets`); measurements already in `log` count toward it. Returns one
    TuneResult per (task, template), in task order.

    `tasks_at_once` tasks are tuned concurrently (default: `default_at_once`), so some tasks'
    candidates build on the CPUs while others' are measured: with builds and measurements taking
    turns, a second device would only halve the measuring part of each turn. Each device still
    measures one candidate at a time.

    `only` ({knob: value}) narrows the search to configs with those values, and to the templates
    whose spaces hold them; a kernel with none is left untuned (a matmul that wgmma cannot take,
    in a model tuned with intrin=wgmma). When no kernel can take them, KnobError. The untuned
    config is still measured first, whatever its values, so that a record never loses to it.

    `options` (a graph's tasks; given Tasks carry their own): the build options the records are
    measured under, and replay under; None reads them from the environment (BuildOptions.from_env).

    `covered` (a tuning database, e.g. the default one): the kernels a build would already take
    one of its records for are left out, so a model is tuned where it has no records (a run cut
    short and its records shipped, a model sharing most kernels with a tuned one).
    """
    tasks, narrowed, db = open_tuning(graph_or_tasks, target, options, only, log)
    if covered is not None:
        keep = [k for k, t in enumerate(tasks) if not has_record(t, covered)]
        logging.getLogger(__name__).info("%d of %d kernels have tuning records already: tuning the other %d",
                                         len(tasks) - len(keep), len(tasks), len(keep))
        tasks, narrowed = [tasks[k] for k in keep], [narrowed[k] for k in keep]
        if not tasks:
            return []
    own_builder, own_runner = builder is None, runner is None
    builder = builder or LocalBuilder()
    runner = runner or LocalRunner()
    try:
        runner, batch_size, at_once = workers_shape(tasks, builder, runner, batch_size, tasks_at_once)
        prepare_checks(runner, tasks)
        session = TuningSession(db, builder, runner, tuner, seed, batch_size, early_stopping, transfer,
                                locked(progress) if progress is not None else None,
                                dict(tuner_options or {}))

        def tune_task(k: int, task: Task) -> list[TuneResult]:
            log_prefix = f"[task {k + 1}/{len(tasks)}] {task.name}"
            spaces, refusals = narrowed[k]
            for why in refusals if not spaces else ():
                logging.getLogger(__name__).info("%s: not tuned: %s", log_prefix, why)
            probe, rest = template_budgets(trials, len(spaces))
            reference, searches = None, []
            for name, space in spaces.items():
                search = TemplateSearch(session, task, name, space, log_prefix, reference)
                if search.resumed:  # (`log` is the tuning log here)
                    logging.getLogger(__name__).info("%s: %d config(s) of %s already in the log, %d trial(s) left", log_prefix,
                             search.resumed, name, max(probe - search.resumed, 0))
                search.run(probe - search.resumed, search.resumed, probe)
                reference = search.reference
                searches.append(search)
            out = [s.outcome() for s in searches]
            if rest > 0 and not session.stop.is_set():  # the rest goes to the template that leads
                lead = searches[min(range(len(out)), key=lambda i: out[i].best_cost)]
                lead.reference = lead.reference or reference
                done = lead.resumed + lead.result.measured
                lead.run(probe + rest - done, done, probe + rest)
                out = [s.outcome() for s in searches]
            return out

        if at_once == 1:
            per_task = [tune_task(k, task) for k, task in enumerate(tasks)]
        else:
            def interrupted() -> None:  # workers killed now: a Ctrl-C does not wait for the batches
                builder.close()
                runner.close()

            per_task = in_threads(tune_task, list(enumerate(tasks)), at_once, session.stop, interrupted)
    finally:
        if own_builder:
            builder.close()
        if own_runner:
            runner.close()
    return [r for rs in per_task for r in rs]


def has_record(task: Task, db: BestRecordSource) -> bool:
    """Whether a build would take one of `db`'s records for the task (its options, a template
    that serves it, a config its space holds): choose_schedule's own answer, for the task's group
    and each other group of its structure (an older record, without its structure, serves only
    its own workload)."""
    groups = [task.lowered] + [lower_group(g) for g in task.members]
    return all(choose_schedule(g, task.target, db, task.options).source == "tuned" for g in groups)


def open_tuning(graph_or_tasks, target, options: Optional[BuildOptions], only: Optional[dict],
                log: Union[None, str, os.PathLike, DB]) -> tuple[list[Task], list[tuple[dict, list[str]]], DB]:
    """The tasks (a graph's fused groups, or given Tasks), each with its templates' spaces
    narrowed to `only` and why others are left, and the log to append to, checked writable
    before any measurement (results that cannot be kept are not worth taking). `only` that
    no kernel can take is a typo, not a narrowing: KnobError before anything starts."""
    options = BuildOptions.from_env() if options is None else options
    tasks = as_tasks(graph_or_tasks, target if target is not None else "llvm", options)
    narrowed = [narrowed_spaces(t, only or {}) for t in tasks]
    if only and not any(spaces for spaces, _ in narrowed):
        refusals = [why for _, whys in narrowed for why in whys]
        raise KnobError(refusals[0] if refusals else f"no template has the knobs {sorted(only)}")
    db = open_log(log)
    db.check_writable()
    return tasks, narrowed, db


def workers_shape(tasks: list[Task], builder, runner, batch_size: Optional[int],
                  tasks_at_once: Optional[int]) -> tuple[object, int, int]:
    """(runner, batch size, tasks tuned at once): a batch keeps every build worker and every
    measuring device busy; several tasks at once share a runner that measures one at a time
    unless it runs concurrently itself."""
    parallelism = max(1, getattr(runner, "parallelism", 1))
    batch_size = batch_size or max(builder.n_parallel, parallelism)
    at_once = max(1, min(len(tasks), tasks_at_once or default_at_once(tasks, parallelism)))
    if at_once > 1 and not getattr(runner, "concurrent_runs", False):
        runner = OneRunAtATime(runner)
    return runner, batch_size, at_once


def prepare_checks(runner, tasks: list[Task]) -> None:
    """Let a runner that checks outputs on its devices (RPC servers) ready those checks for every
    task now, while the first candidates build."""
    prepare = getattr(runner, "prepare", None)
    if prepare is not None and tasks:
        prepare([run_spec(t) for t in tasks], tasks[0].target.kind.name)


def narrowed_spaces(task: Task, only: dict) -> tuple[dict, list[str]]:
    """The templates of `task` to tune, each with the space its trials come from (narrowed to
    `only`'s knob values; the whole space when `only` is empty), and why each other one is not."""
    if not only:
        return {t.name: task.spaces[t.name] for t in task.tunable()}, []
    keep, refusals = {}, []
    for tmpl in task.tunable():
        try:
            keep[tmpl.name] = task.spaces[tmpl.name].restricted(only)
        except KnobError as e:
            refusals.append(f"{task.name}, template {tmpl.name}: {e}")
    return keep, refusals


def template_budgets(trials: int, templates: int) -> tuple[int, int]:
    """(trials each template gets first, trials then given to the fastest of them): half the
    budget finds the template, as MIOpen picks a solver before tuning it, the other half tunes
    it. An even split would spend most trials on templates that cannot win (CUDA-core convs
    beside a tensor-core GEMM)."""
    if templates <= 1:
        return trials, 0
    probe = max(1, trials // (2 * templates))
    return probe, max(0, trials - probe * templates)


AT_ONCE_PER_DEVICE = 8


def default_at_once(tasks: list[Task], devices: int) -> int:
    """AT_ONCE_PER_DEVICE kernels at once a GPU; one at a time on the CPU target, whose
    measurements would share the CPUs with the next kernel's builds (and time them too).
    Why 8: a kernel's round is a batch built (seconds of nvcc) then measured (about 0.12 s a
    candidate), so a device is fed only while enough kernels build meanwhile. Tuning ResNet-50
    on H200s (`python -m tefuse.bench.scaleout`), one device measured 44% of the time with 2
    kernels at once and 88% with 8, and trials a minute doubled."""
    if tasks and tasks[0].target.kind.name == "llvm":
        return 1
    return AT_ONCE_PER_DEVICE * devices


def in_threads(fn, jobs: list, workers: int, stop: threading.Event,
                on_interrupt: Optional[Callable[[], None]] = None) -> list:
    """fn(*job) for every job, `workers` at a time, results in job order. The first error (in
    time) sets `stop`: jobs not started are dropped, running ones end after their batch in
    flight (fn checks `stop`), and that first error is raised; later ones are logged. An
    interrupt (Ctrl-C) calls on_interrupt first, which ends the batches in flight (their
    results are not recorded), and is raised once the threads have returned."""
    errors: list[BaseException] = []
    lock = threading.Lock()

    def guarded(*job):
        if stop.is_set():
            return None
        try:
            return fn(*job)
        except BaseException as e:
            with lock:
                errors.append(e)
            stop.set()
            raise

    pool = ThreadPoolExecutor(workers, thread_name_prefix="tune")
    futures = [pool.submit(guarded, *job) for job in jobs]
    try:
        wait(futures)
    except BaseException:  # KeyboardInterrupt
        stop.set()
        if on_interrupt is not None:
            on_interrupt()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    if errors:
        for e in errors[1:]:
            log.warning("also failed while tuning: %s: %s", type(e).__name__, e)
        raise errors[0]
    return [f.result() for f in futures]


class OneRunAtATime:
    """A runner that measures one batch at a time, shared by concurrently tuned tasks (their
    builds still overlap its measurements)."""

    def __init__(self, inner) -> None:
        self._inner, self._lock = inner, threading.Lock()

    def run(self, *args, **kwargs):
        with self._lock:
            return self._inner.run(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._inner, name)


def locked(progress: Progress) -> Progress:
    lock = threading.Lock()

    def call(*args) -> None:
        with lock:
            progress(*args)

    return call
