"""One template's search of one task: resumed from the log, run in batches, every batch logged.

A `TemplateSearch` keeps its tuner between calls of `run`, so a whole-model budget can give a
kernel several rounds (tune/budget.py) without re-reading the log or re-proposing a config.
"""
from __future__ import annotations

import logging
import math
import os
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Union

from .builder import LocalBuilder
from .database import Database, LayeredDatabase, default_database, open_database
from .measure import COMPILE_ERROR, MeasureResult, run_spec
from .parallel import DevicesLost
from .record import TuningRecord
from .task import Task
from .tuners import make_tuner
from ..errors import TefuseError

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

    @property
    def compile_errors(self) -> int:
        return self.errors.get(COMPILE_ERROR, 0)


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


def open_log(log_: Union[None, str, os.PathLike, DB]) -> DB:
    """The database a tuning run appends to: the user's by default, else the one given."""
    if log_ is None:
        return default_database()
    if isinstance(log_, (Database, LayeredDatabase)):
        return log_
    return open_database(log_)


def own_records(db: DB, task: Task) -> list[TuningRecord]:
    """The task's records in the user's layer (failures included) and those of the other
    workloads of its structure (a re-calibrated model's kernels resume from the last
    calibration's), in the order they were measured: what resuming and the budget's history
    count. Shipped logs were measured on other machines."""
    user = getattr(db, "user", db)
    own = user.records(task.workload, task.target_key)
    alike = getattr(user, "structure_records", None)
    if alike is None:
        return own
    others = [r for r in alike(task.structure, task.target_key) if r.workload != task.workload]
    return sorted(own + others, key=lambda r: r.timestamp) if others else own  # (stable) as measured


def append_records(db: DB, records: list[TuningRecord]) -> None:
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
                        error=r.error, error_msg=r.error_msg, options=task.options.changed(),
                        structure=task.structure)


@dataclass
class TuningSession:
    """What every (task, template) of one tuning run shares: where records go, how
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
    # time.monotonic() after which no new batch starts (a whole-model budget); None: no limit
    deadline: Optional[float] = None

    def out_of_time(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline


class TemplateSearch:
    """The search of one (task, template): its tuner, resumed from the configs the user's log
    holds (known by their values, not their logged indices), and the reference build results
    are checked against (shared by the task's templates: `reference`)."""

    def __init__(self, session: TuningSession, task: Task, template: str, space, prefix: str,
                 reference=None) -> None:
        self.session, self.task, self.template, self.space, self.prefix = session, task, template, space, prefix
        self.reference = reference
        self.device = getattr(session.runner, "device", None) or device_name(task.target.kind.name)
        self.tuner = make_tuner(session.tuner, space, seed=session.seed, **session.tuner_options)
        old = [r for r in own_records(session.db, task) if r.template == template]
        # by the records' values, not their logged indices: a space that has grown a knob value since
        # (the tensor-core stages, for one, gained 6 and 8) numbers its configs anew
        by_idx: dict[int, float] = {}
        for r in old:
            i = space.find(r.config)
            if i is not None:
                by_idx[i] = min(by_idx.get(i, math.inf), r.median_cost)
        self.done_idx = set(by_idx)
        if by_idx:
            self.tuner.load_history(list(by_idx), list(by_idx.values()))
        if session.transfer:
            others = [(r.config, r.median_cost, r.workload) for r in session.db.records(target=task.target_key)
                      if r.template == template and r.workload != task.workload]
            if others:
                self.tuner.load_transfer(others)
        self.result = TuneResult(task, template, None, math.inf, None, 0, len(self.done_idx))
        self._fallback_pending = True  # the untuned build's config is measured first

    @property
    def resumed(self) -> int:
        return len(self.done_idx)

    @property
    def best_cost(self) -> float:
        return self.tuner.best_cost

    def exhausted(self) -> bool:
        """Every config of the space measured (or refused by its rules)."""
        return not self.tuner.has_next() and self._first() is None

    def _first(self) -> Optional[int]:
        """The fallback config's index when it is still to be measured: it comes first, so that
        a record never loses to no record."""
        if not self._fallback_pending or self.template != self.task.templates[0].name:
            return None
        index = self.task.fallback(self.template).index
        ok = 0 <= index < len(self.space) and index not in self.done_idx and index not in self.tuner.costs
        return index if ok else None

    def _ensure_reference(self) -> None:
        if self.reference is None:
            task = self.task
            self.reference = self.session.builder.build(task, task.templates[0].name, [task.fallback()])[0]
            if not self.reference.ok:
                log.warning("%s: the fallback config does not build (%s); results go unchecked",
                            self.prefix, self.reference.error_msg)

    def run(self, trials: int, shown_done: int = 0, shown_total: Optional[int] = None) -> int:
        """Measure up to `trials` new configs, a batch at a time, each batch appended to the log
        before the next starts; returns how many were measured. It ends early when the space is
        exhausted, on early stopping, or when the session is stopped or out of time (after the
        batch in flight). `shown_done`/`shown_total`: the progress callback's count before this
        call and its total."""
        session, task, template, space, tuner = self.session, self.task, self.template, self.space, self.tuner
        if trials <= 0:
            return 0
        self._ensure_reference()
        first = self._first()
        self._fallback_pending = False
        if first is not None:
            tuner.visited.add(first)
        db, builder, runner, kind = session.db, session.builder, session.runner, task.target.kind.name
        spec = run_spec(task, seed=session.seed)
        res, left, total = self.result, trials, shown_total or trials
        t0 = time.perf_counter()
        while left > 0 and (first is not None or tuner.has_next()) and not session.stop.is_set():
            if session.out_of_time():
                break
            n = min(session.batch_size, left)
            k = n - (first is not None)
            batch = ([first] if first is not None else []) + (tuner.next_batch(k) if k and tuner.has_next() else [])
            first = None
            if not batch:
                break
            configs = [space.get(i) for i in batch]
            try:
                measured = runner.run(spec, kind, builder.build(task, template, configs), self.reference)
            except DevicesLost as e:  # keep what the batch measured before the last device went
                append_records(db, [_record(task, template, self.device, m) for m in e.partial])
                raise
            append_records(db, [_record(task, template, self.device, m) for m in measured])
            tuner.update([m.index for m in measured], [m.cost for m in measured])
            for m in measured:
                res.history.append(m.cost)
                if m.error:
                    res.errors[m.error] = res.errors.get(m.error, 0) + 1
                    log.debug("%s: #%d %s: %s", self.prefix, m.index, m.error, m.error_msg)
            res.measured += len(measured)
            left -= len(measured)
            done = shown_done + trials - left
            log.info("%s: trial %d/%d, best %s (%.0fs)", self.prefix, done, total,
                     f"{tuner.best_cost * 1e3:.4f} ms" if math.isfinite(tuner.best_cost) else "none yet",
                     time.perf_counter() - t0)
            if session.progress is not None:
                session.progress(task.name, done, total, tuner.best_cost)
            if session.early_stopping and tuner.trials_since_best >= session.early_stopping:
                log.info("%s: no improvement in %d trials: stopping early", self.prefix, tuner.trials_since_best)
                break
        return trials - left

    def outcome(self) -> TuneResult:
        """The result so far: the best is the log's when this template holds it."""
        res, tuner = self.result, self.tuner
        best = self.session.db.best(self.task.workload, self.task.target_key)
        if best is not None and best.template == self.template:
            res.best_index, res.best_cost, res.best_config = best.config_index, best.median_cost, best.config
        elif tuner.best_index is not None:
            res.best_index, res.best_cost = tuner.best_index, tuner.best_cost
            res.best_config = self.space.get(tuner.best_index).to_json()
        return res
