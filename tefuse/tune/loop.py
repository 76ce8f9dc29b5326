"""The tuning loop: propose -> build (parallel) -> run (on one device, or spread over several) -> log -> learn.

(The search strategies that propose configs live in tune/tuners/; this module drives them.)

Every measurement becomes one TuningRecord appended to the log as soon as its batch is
done, so an interrupted run loses at most one batch, and a rerun resumes: configs already
in the log for the workload/template are not measured again and count toward the budget.
"""
from __future__ import annotations

import logging
import math
import os
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Callable, Optional, Union

from .builder import LocalBuilder
from .database import Database, LayeredDatabase, default_database, open_database
from .measure import MeasureResult, run_spec
from .parallel import DevicesLost
from .record import TuningRecord
from .runner import LocalRunner
from .task import Task, as_tasks
from .tuners import make_tuner
from ..errors import TefuseError
from ..options import BuildOptions
from ..schedules.space import KnobError

log = logging.getLogger(__name__)

DB = Union[Database, LayeredDatabase]
Progress = Callable[[str, int, int, float], None]  # (task name, done, budget, best seconds)


@dataclass
class TuneResult:
    """Outcome for one (task, template): what the log now says is best, and what it took."""

    task: Task
    template: str
    best_index: Optional[int]
    best_cost: float
    best_config: Optional[dict]
    measured: int  # measurements made by this run
    resumed: int  # measurements found in the log beforehand
    errors: dict[str, int] = field(default_factory=dict)
    history: list[float] = field(default_factory=list)  # cost of each new trial, in order

    def after(self, earlier: "TuneResult") -> "TuneResult":
        """This result of a template's second round, counted together with its first."""
        errors = dict(earlier.errors)
        for k, v in self.errors.items():
            errors[k] = errors.get(k, 0) + v
        return TuneResult(self.task, self.template, self.best_index, self.best_cost, self.best_config,
                          earlier.measured + self.measured, earlier.resumed, errors,
                          earlier.history + self.history)


def device_name(target_kind: str) -> str:
    """What the records say they were measured on."""
    if target_kind == "llvm":
        import platform

        return f"cpu-{platform.machine()}"
    try:
        import tvm

        dev = tvm.device(target_kind, 0)
        name = getattr(dev, "device_name", None)
        return str(name) if name else f"{target_kind}:0"
    except Exception:  # noqa: BLE001
        return f"{target_kind}:0"


def _as_db(log_: Union[None, str, os.PathLike, DB]) -> DB:
    if log_ is None:
        return default_database()
    if isinstance(log_, (Database, LayeredDatabase)):
        return log_
    return open_database(log_)


def _append(db: DB, records: list[TuningRecord]) -> None:
    """Append a batch's records; when the log cannot be written after all (the disk filled,
    the file system went read-only), the batch goes to a file in the temporary directory and
    the error names both files, so that no measurement is lost silently."""
    try:
        db.append_many(records)
    except OSError as e:
        path = getattr(db, "user", db).path
        why = f"tuning log {path}: cannot write ({e.strerror or e})"
        try:
            fd, kept = tempfile.mkstemp(prefix="tefuse-unsaved-", suffix=".jsonl")
            with os.fdopen(fd, "w") as f:
                f.writelines(r.to_json() + "\n" for r in records)
        except OSError as e2:
            raise TefuseError(f"{why}; the {len(records)} record(s) just measured are lost "
                              f"(the temporary directory failed too: {e2.strerror or e2})") from None
        raise TefuseError(f"{why}; the {len(records)} record(s) just measured are in {kept} "
                          f"(`tefuse db merge {kept} -o LOG` adds them to a log)") from None


def _record(task: Task, template: str, device: str, r: MeasureResult) -> TuningRecord:
    return TuningRecord(workload=task.workload, target=task.target_key, device=device, template=template,
                        config=r.config, config_index=r.index, costs=list(r.costs) if r.ok else [],
                        error=r.error, error_msg=r.error_msg, options=task.options.changed())


@dataclass
class TuningSession:
    """What every (task, template) of one `tune()` call shares: where records go, how
    candidates are built and run, and the search's settings."""

    db: DB
    builder: LocalBuilder
    runner: object
    tuner: str
    seed: int
    batch_size: int
    early_stopping: Optional[int] = None
    transfer: bool = True
    progress: Optional[Progress] = None
    tuner_options: dict = field(default_factory=dict)
    # set when a concurrently tuned kernel failed or the user interrupted: every kernel stops
    # after its batch in flight (whose records are written)
    stop: threading.Event = field(default_factory=threading.Event)


def tune(graph_or_tasks, target=None, *, trials: int, tuner: str = "xgb",
         log: Union[None, str, os.PathLike, DB] = None, early_stopping: Optional[int] = None,
         seed: int = 0, builder: Optional[LocalBuilder] = None, runner=None,
         batch_size: Optional[int] = None, transfer: bool = True,
         progress: Optional[Progress] = None, tuner_options: Optional[dict] = None,
         tasks_at_once: Optional[int] = None, only: Optional[dict] = None,
         options: Optional[BuildOptions] = None) -> list[TuneResult]:
    """Tune every task (a Graph's fused groups, or given Tasks) for `trials` measurements each.

    `trials` is the budget per task: a few for each of its templates, the rest for the fastest
    of them (`_template_budgets`); measurements already in `log` count toward it. Returns one
    TuneResult per (task, template), in task order.

    `tasks_at_once` tasks are tuned concurrently (default: one more than the devices that
    measure on a GPU, one on the CPU target), so one task's candidates build on the CPUs while
    others' are measured: with builds and measurements taking turns, a second device would only
    halve the measuring part of each turn. Each device still measures one candidate at a time.

    `only` ({knob: value}) narrows the search to configs with those values, and to the templates
    whose spaces hold them; a kernel with none is left untuned (a matmul that wgmma cannot take,
    in a model tuned with intrin=wgmma). When no kernel can take them, KnobError. The untuned
    config is still measured first, whatever its values, so that a record never loses to it.

    `options` (a graph's tasks; given Tasks carry their own): the build options the records are
    measured under, and replay under; None reads them from the environment (BuildOptions.from_env).
    """
    options = BuildOptions.from_env() if options is None else options
    tasks = as_tasks(graph_or_tasks, target if target is not None else "llvm", options)
    narrowed = [_narrowed(t, only or {}) for t in tasks]  # per task: {template: its space}, refusals
    if only and not any(spaces for spaces, _ in narrowed):  # a typo, not a narrowing: stop before starting
        refusals = [why for _, whys in narrowed for why in whys]
        raise KnobError(refusals[0] if refusals else f"no template has the knobs {sorted(only)}")
    db = _as_db(log)
    db.check_writable()  # before any measurement: results that cannot be kept are not worth taking
    own_builder, own_runner = builder is None, runner is None
    builder = builder or LocalBuilder()
    runner = runner or LocalRunner()
    try:
        parallelism = max(1, getattr(runner, "parallelism", 1))
        # a batch keeps every build worker and every measuring device busy
        batch_size = batch_size or max(builder.n_parallel, parallelism)
        at_once = max(1, min(len(tasks), tasks_at_once or _default_at_once(tasks, parallelism)))
        if at_once > 1 and not getattr(runner, "concurrent_runs", False):
            runner = _OneRunAtATime(runner)
        session = TuningSession(db, builder, runner, tuner, seed, batch_size, early_stopping, transfer,
                                _locked(progress) if progress is not None else None,
                                dict(tuner_options or {}))

        def tune_task(k: int, task: Task) -> list[TuneResult]:
            log_prefix = f"[task {k + 1}/{len(tasks)}] {task.name}"
            spaces, refusals = narrowed[k]
            for why in refusals if not spaces else ():
                logging.getLogger(__name__).info("%s: not tuned: %s", log_prefix, why)
            probe, rest = _template_budgets(trials, len(spaces))
            reference, out = None, []
            for name, space in spaces.items():
                res, reference = _tune_template(session, task, name, space, probe, reference, log_prefix)
                out.append(res)
            if rest > 0 and not session.stop.is_set():  # the rest goes to the template that leads
                best = min(range(len(out)), key=lambda i: out[i].best_cost)
                name = out[best].template
                more, _ = _tune_template(session, task, name, spaces[name], probe + rest, reference, log_prefix)
                out[best] = more.after(out[best])
            return out

        if at_once == 1:
            per_task = [tune_task(k, task) for k, task in enumerate(tasks)]
        else:
            def interrupted() -> None:  # workers killed now: a Ctrl-C does not wait for the batches
                builder.close()
                runner.close()

            per_task = _in_threads(tune_task, list(enumerate(tasks)), at_once, session.stop, interrupted)
    finally:
        if own_builder:
            builder.close()
        if own_runner:
            runner.close()
    return [r for rs in per_task for r in rs]


def _narrowed(task: Task, only: dict) -> tuple[dict, list[str]]:
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


def _template_budgets(trials: int, templates: int) -> tuple[int, int]:
    """(trials each template gets first, trials then given to the fastest of them): half the
    budget finds the template, as MIOpen picks a solver before tuning it, the other half tunes
    it. An even split would spend most trials on templates that cannot win (CUDA-core convs
    beside a tensor-core GEMM)."""
    if templates <= 1:
        return trials, 0
    probe = max(1, trials // (2 * templates))
    return probe, max(0, trials - probe * templates)


def _default_at_once(tasks: list[Task], devices: int) -> int:
    """devices + 1 kernels at once on a GPU; one at a time on the CPU target, whose
    measurements would share the CPUs with the next kernel's builds (and time them too)."""
    if tasks and tasks[0].target.kind.name == "llvm":
        return 1
    return devices + 1


def _in_threads(fn, jobs: list, workers: int, stop: threading.Event,
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


class _OneRunAtATime:
    """A runner that measures one batch at a time, shared by concurrently tuned tasks (their
    builds still overlap its measurements)."""

    def __init__(self, inner) -> None:
        self._inner, self._lock = inner, threading.Lock()

    def run(self, *args, **kwargs):
        with self._lock:
            return self._inner.run(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._inner, name)


def _locked(progress: Progress) -> Progress:
    lock = threading.Lock()

    def call(*args) -> None:
        with lock:
            progress(*args)

    return call


def _fallback_index(task: Task, template: str, space, done: set) -> Optional[int]:
    """The fallback config's index in `template`'s space when it is the template untuned builds
    use and the log does not hold it yet."""
    if template != task.templates[0].name:
        return None
    index = task.fallback(template).index
    return index if 0 <= index < len(space) and index not in done else None


def _tune_template(session: TuningSession, task: Task, template: str, space, budget: int, reference,
                   prefix: str):
    db, builder, runner = session.db, session.builder, session.runner
    kind = task.target.kind.name
    device = getattr(runner, "device", None) or device_name(kind)
    tuner = make_tuner(session.tuner, space, seed=session.seed, **session.tuner_options)

    # resume: what the log already holds for this workload/template
    # (the user's layer only, failures included: shipped logs were measured on other machines)
    own = getattr(db, "user", db)
    old = [r for r in own.records(task.workload, task.target_key) if r.template == template]
    # by the records' values, not their logged indices: a space that has grown a knob value since
    # (the tensor-core stages, for one, gained 6 and 8) numbers its configs anew
    by_idx: dict[int, float] = {}
    for r in old:
        i = space.find(r.config)
        if i is not None:
            by_idx[i] = min(by_idx.get(i, math.inf), r.median_cost)
    done_idx = set(by_idx)
    if by_idx:
        tuner.load_history(list(by_idx), list(by_idx.values()))
    if session.transfer:
        others = [(r.config, r.median_cost, r.workload) for r in db.records(target=task.target_key)
                  if r.template == template and r.workload != task.workload]
        if others:
            tuner.load_transfer(others)
    remaining = budget - len(done_idx)
    if done_idx:
        log.info("%s: %d config(s) of %s already in the log, %d trial(s) left", prefix, len(done_idx),
                 template, max(remaining, 0))

    spec = run_spec(task, seed=session.seed)
    res = TuneResult(task, template, None, math.inf, None, 0, len(done_idx))
    if remaining > 0 and reference is None:
        fb = task.fallback()
        reference = builder.build(task, task.templates[0].name, [fb])[0]
        if not reference.ok:
            log.warning("%s: the fallback config does not build (%s); results go unchecked",
                        prefix, reference.error_msg)
    # the untuned build's config is measured first, so that a record never loses to no record
    first = _fallback_index(task, template, space, done_idx) if remaining > 0 else None
    if first is not None:
        tuner.visited.add(first)
    t0 = time.perf_counter()
    while remaining > 0 and (first is not None or tuner.has_next()) and not session.stop.is_set():
        n = min(session.batch_size, remaining)
        k = n - (first is not None)
        batch = ([first] if first is not None else []) + (tuner.next_batch(k) if k and tuner.has_next() else [])
        first = None
        if not batch:
            break
        configs = [space.get(i) for i in batch]
        try:
            measured = runner.run(spec, kind, builder.build(task, template, configs), reference)
        except DevicesLost as e:  # keep what the batch measured before the last device went
            _append(db, [_record(task, template, device, m) for m in e.partial])
            raise
        _append(db, [_record(task, template, device, m) for m in measured])
        tuner.update([m.index for m in measured], [m.cost for m in measured])
        for m in measured:
            res.history.append(m.cost)
            if m.error:
                res.errors[m.error] = res.errors.get(m.error, 0) + 1
                log.debug("%s: #%d %s: %s", prefix, m.index, m.error, m.error_msg)
        res.measured += len(measured)
        remaining -= len(measured)
        done = budget - remaining
        log.info("%s: trial %d/%d, best %s (%.0fs)", prefix, done, budget,
                 f"{tuner.best_cost * 1e3:.4f} ms" if math.isfinite(tuner.best_cost) else "none yet",
                 time.perf_counter() - t0)
        if session.progress is not None:
            session.progress(task.name, done, budget, tuner.best_cost)
        if session.early_stopping and tuner.trials_since_best >= session.early_stopping:
            log.info("%s: no improvement in %d trials: stopping early", prefix, tuner.trials_since_best)
            break
    best = db.best(task.workload, task.target_key)
    if best is not None and best.template == template:
        res.best_index, res.best_cost, res.best_config = best.config_index, best.median_cost, best.config
    elif tuner.best_index is not None:
        res.best_index, res.best_cost = tuner.best_index, tuner.best_cost
        res.best_config = space.get(tuner.best_index).to_json()
    return res, reference
