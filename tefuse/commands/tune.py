"""`tefuse tune`: autotune a chain spec's or an ONNX model's kernels, appending to a log.

    tefuse tune "conv2d(k=64,r=3,pad=1)+bias+batch_norm+relu" --target cuda --trials 64 \\
        --tuner xgb --log tune.jsonl [--early-stopping 32]

With `--batch 1,8,32` the kernels of every batch size are tuned, into the one log (what
`tefuse build --batch 1,8,32` then finds).
Rerunning the same command resumes: configs already in the log are not measured again.

A whole model within a time budget instead of a trial count per kernel:

    tefuse tune model.onnx --minutes 30 --log model.jsonl [--round-trials 16] [--json tune.json]

rounds of trials go where the model's time is expected to fall most (tune/scheduler.py); it
ends with the model timed untuned against tuned (`--no-compare` skips that; `--compare` asks
for it after a `--trials` run).
`--only intrin=wgmma` narrows the search to configs with that knob value (a sweep of Hopper's
wgmma configs: `--tuner grid --only intrin=wgmma`).
Measuring on several GPUs, each batch spread over them (one candidate per GPU at a time):

    tefuse tune ... --devices 0,1                 # this machine's GPUs 0 and 1
    tefuse tune ... --rpc HOST:PORT --key KEY     # every TVM RPC server under KEY at that tracker
"""
from __future__ import annotations

import argparse
import logging
import math

from ..errors import TefuseError
from ..tune.knobs import knob_assignment
from . import UsageError

log = logging.getLogger(__name__)


def add_parser(sub) -> None:
    from .build import add_batch_option, add_common, add_horizontal_option, add_precision_option

    p = sub.add_parser("tune", help="autotune the kernels of a chain spec or ONNX model")
    add_common(p)
    add_batch_option(p)
    add_precision_option(p)
    p.add_argument("--trials", "-n", type=int, default=None, help="measurements per kernel (default 64)")
    p.add_argument("--minutes", type=float, default=None, metavar="N",
                   help="tune the whole model for N minutes of wall time instead of --trials per kernel: "
                        "rounds go to the kernels where the model's time is expected to fall most; "
                        "rerunning with the same log continues")
    p.add_argument("--round-trials", type=int, default=None, metavar="N",
                   help="with --minutes: trials in a round (default 16; a kernel's first round: half)")
    p.add_argument("--compare", action=argparse.BooleanOptionalAction, default=None,
                   help="time the model untuned against tuned at the end, in turns "
                        "(default: with --minutes)")
    p.add_argument("--json", default=None, metavar="FILE",
                   help="write the kernels' results, the rounds and the model's times as JSON")
    p.add_argument("--tuner", default="xgb", choices=["xgb", "random", "grid"])
    add_only_option(p)
    add_horizontal_option(p)  # the graph a build with it makes: sibling convs merged into one product
    p.add_argument("--log", "-l", default=None,
                   help="tuning log (JSON lines) to append to and resume from (default: the user database); "
                        "refused before tuning when it cannot be written")
    p.add_argument("--early-stopping", type=int, default=None, metavar="N",
                   help="stop a kernel after N trials without improvement (with --minutes: "
                        "default 64, and the budget goes to the other kernels)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--untuned-only", action="store_true",
                   help="with --trials: leave out the kernels a build already takes a tuning record for from "
                        "elsewhere than the log tuned into (the shipped logs; the user database, unless it is that "
                        "log), whose own kernels resume as usual")
    p.add_argument("--parallel", "-j", type=int, default=None, help="parallel builds (default: CPU count)")
    p.add_argument("--rpc", "--rpc-tracker", dest="rpc", default=None, metavar="HOST:PORT",
                   help="measure on every TVM RPC server registered under --key with this tracker, in parallel")
    p.add_argument("--key", "--rpc-key", dest="key", default=None, help="device key of the RPC servers")
    p.add_argument("--devices", default=None, metavar="0,1,...",
                   help="measure on these local devices in parallel, one process pinned to each")
    p.set_defaults(func=run)


def add_only_option(p) -> None:
    p.add_argument("--only", action="append", default=[], metavar="KNOB=VALUE", type=knob_assignment,
                   help="tune only configs with this knob value (repeatable; a JSON value or a word: "
                        "intrin=wgmma, stages=2, tile=[64,128,32,64]); the untuned config is measured first "
                        "whatever it is; kernels whose templates cannot take the value are not tuned")


class _TuneBars:
    """The progress callback for tune(): one bar over the trials of every kernel started so far
    (several kernels are tuned at once), left on the screen at its last state; `label` (the
    batch size) goes into its description and `close` ends it, so the next batch's starts
    anew. Off when stderr is not a terminal or with --no-progress."""

    def __init__(self) -> None:
        from . import progress as P

        self._p, self._bar, self._tasks, self.label = P, None, {}, ""
        self.update = self._update if P.enabled() else None

    def _update(self, name: str, done: int, total: int, best: float) -> None:
        if self._bar is None:
            self._bar = self._p.bar(None, f"tuning{self.label}", unit="trial", leave=True)
        b = self._bar
        if b is None:
            return
        self._tasks[name] = (done, total)
        n = len(self._tasks)
        b.set_description(f"tuning {n} kernel{'s' if n > 1 else ''}{self.label}", refresh=False)
        b.total = sum(t for _, t in self._tasks.values())
        b.n = sum(d for d, _ in self._tasks.values())
        running = sum(d < t for d, t in self._tasks.values())
        best_s = f"{best * 1e3:.4f} ms" if math.isfinite(best) else "-"
        # one kernel: its best; several: how many still run, and the best of the one just measured
        b.set_postfix_str(f"best {best_s}" if n == 1 else f"{running} running; {name[:24]}: best {best_s}",
                          refresh=False)
        b.refresh()

    def close(self) -> None:
        self._p.close(self._bar)
        self._bar, self._tasks = None, {}


def _runner(args: argparse.Namespace, target):
    """--rpc/--key or --devices: a runner over several devices; else None (the local device)."""
    if args.rpc and args.devices:
        raise UsageError("--rpc and --devices exclude each other")
    if args.rpc:
        from ..tune.rpc import RPCRunner, parse_address

        if not args.key:
            raise UsageError("--rpc needs --key (the key the servers registered under)")
        try:
            return RPCRunner(key=args.key, tracker=parse_address(args.rpc))
        except ValueError as e:
            raise UsageError(f"--rpc: {e}") from None
    if args.devices:
        from ..target import has_gpu
        from ..tune.parallel import local_devices_runner

        try:
            indices = [int(i) for i in args.devices.split(",") if i.strip()]
        except ValueError:
            raise UsageError(f"--devices: expected indices such as 0,1, got {args.devices!r}") from None
        kind = target.kind.name
        missing = [i for i in indices if kind != "llvm" and not has_gpu(kind, i)]
        if missing or not indices:
            raise TefuseError(f"--devices: no {kind} device {', '.join(map(str, missing)) or '(none given)'}")
        return local_devices_runner(indices, kind)
    return None


class _BudgetBar:
    """The progress callback of a --minutes run: one bar over the budget's seconds, advanced
    as rounds end, its postfix the round just done. Off when bars are."""

    def __init__(self, seconds: float) -> None:
        from . import progress as P

        self._p, self._seconds, self._bar = P, seconds, None
        self.update = self._update if P.enabled() else None

    def _update(self, r) -> None:
        if self._bar is None:
            self._bar = self._p.bar(round(self._seconds), "tuning within budget", unit="s", leave=True)
        b = self._bar
        if b is None:
            return
        b.n = min(round(r.elapsed), b.total)
        best = f"{r.best * 1e3:.4f} ms" if math.isfinite(r.best) else "-"
        b.set_postfix_str(f"round {r.number}: {r.task[:24]} {r.trials} trials, best {best}; "
                          f"{max(r.time_left, 0):.0f}s left", refresh=False)
        b.refresh()

    def close(self) -> None:
        self._p.close(self._bar)
        self._bar = None


def _check_budget(args: argparse.Namespace) -> None:
    if args.minutes is not None:
        if args.untuned_only:
            raise UsageError("--untuned-only goes with --trials (--minutes spends its budget where the gain is "
                             "expected, records or not)")
        if args.trials is not None:
            raise UsageError("--trials and --minutes exclude each other (a count per kernel, or a time for all)")
        if not args.minutes > 0:
            raise UsageError("--minutes must be more than 0")
        if args.round_trials is not None and args.round_trials < 1:
            raise UsageError("--round-trials must be at least 1")
        if args.early_stopping is not None and args.early_stopping < 1:
            raise UsageError("--early-stopping must be at least 1")
        return
    if args.round_trials is not None:
        raise UsageError("--round-trials goes with --minutes")
    args.trials = 64 if args.trials is None else args.trials
    if args.trials < 1:
        raise UsageError("--trials must be at least 1")


def _settings(args: argparse.Namespace):
    from ..tune.scheduler import SchedulerSettings

    kw = {}
    if args.round_trials is not None:
        kw.update(round_trials=args.round_trials, warmup_trials=max(1, args.round_trials // 2))
    if args.early_stopping is not None:
        kw.update(patience=args.early_stopping)
    return SchedulerSettings(**kw)


def _budget_tasks(graphs: dict, target) -> tuple[list, dict]:
    """The kernels of every batch size's graph as one list (a kernel two batch sizes share
    once, its weight summed), and the batch size each came from (by workload)."""
    from ..options import BuildOptions
    from ..tune.task import as_tasks

    options = BuildOptions.from_env()
    tasks, batch_of = {}, {}
    for b, graph in graphs.items():
        for t in as_tasks(graph, target, options):
            if t.structure in tasks:  # alike but for folded constants: one task (fusion/workload.py)
                tasks[t.structure].stand_for([t.group, *t.members], t.weight)
            else:
                tasks[t.structure], batch_of[t.workload] = t, b
    return list(tasks.values()), batch_of


def _tune_within(args: argparse.Namespace, graphs: dict, target, builder, runner):
    """(batch, TuneResult) pairs and the BudgetReport of a --minutes run."""
    from ..schedules.space import KnobError
    from ..tune.budget import tune_within

    tasks, batch_of = _budget_tasks(graphs, target)
    bar = _BudgetBar(args.minutes * 60)
    try:
        report = tune_within(tasks, target, seconds=args.minutes * 60, tuner=args.tuner, log=args.log,
                             seed=args.seed, builder=builder, runner=runner, settings=_settings(args),
                             on_round=bar.update, only=dict(args.only))
    except KnobError as e:
        raise UsageError(f"--only: {e}") from None
    finally:
        bar.close()
    return [(batch_of[r.task.workload], r) for r in report.results], report


def _compare(args: argparse.Namespace, raw_graphs: dict, target) -> list:
    """(batch, ModelTimes) per graph: untuned against the log's best, timed in turns."""
    from ..bench.tuned_model import time_untuned_and_tuned
    from ..codegen.cache import default_cache
    from ..tune.search import open_log
    from .build import build_options, graph_options

    db, out = open_log(args.log), []
    for b, graph in raw_graphs.items():
        log.info("timing the model%s untuned and tuned", "" if b is None else f" (batch {b})")
        out.append((b, time_untuned_and_tuned(graph, target, db, cache=default_cache(), jobs=args.parallel,
                                              options=build_options(args), **graph_options(args, graph))))
    return out


def _budget_lines(report) -> list[str]:
    have = sum(1 for t in report.tasks if t.rounds)  # kernels with records, from this run or before
    why = {"budget": "the budget is spent", "converged": "every kernel converged"}.get(report.stopped,
                                                                                      report.stopped)
    return [f"budget {report.budget / 60:g} min: tuned for {report.elapsed:.1f} s (workers started in "
            f"{report.startup:.1f} s before), {report.rounds} rounds, "
            f"{report.measured} trials over {len(report.tasks)} kernels ({have} with records); stopped: {why}"]


def _error_rate_line(results) -> str:
    from ..tune.measure import COMPILE_ERROR

    measured = sum(r.measured for _, r in results)
    errs = sum(r.errors.get(COMPILE_ERROR, 0) for _, r in results)
    rate = f"{100 * errs / measured:.1f}%" if measured else "-"
    return f"compile errors: {errs} of {measured} trials ({rate})"


def _times_line(b, t) -> str:
    where = "" if b is None else f"batch {b}: "
    return (f"{where}model time: untuned {t.untuned_ms:.4f} ms, tuned {t.tuned_ms:.4f} ms ({t.speedup:.2f}x; "
            f"{t.tuned_kernels} of {t.kernels} kernels tuned), median of {t.runs} runs each, in turns")


def _write_json(args: argparse.Namespace, target, results, report, times) -> None:
    import json
    from pathlib import Path

    from ..tune.measure import COMPILE_ERROR
    from ..version import __version__
    from .paths import write_failed

    def ms(x: float):
        return x * 1e3 if math.isfinite(x) else None

    measured = sum(r.measured for _, r in results)
    errs = sum(r.errors.get(COMPILE_ERROR, 0) for _, r in results)
    doc = {
        "schema": "tefuse-tune/1", "tefuse": __version__, "spec": args.spec, "target": str(target),
        "log": args.log, "tuner": args.tuner,
        "budget": None if report is None else {
            "minutes": args.minutes, "elapsed_s": report.elapsed, "startup_s": report.startup,
            "rounds": report.rounds,
            "stopped": report.stopped, "model_ms_by_records_before": ms(report.model_time_before),
            "model_ms_by_records_after": ms(report.model_time_after)},
        "trials_per_kernel": args.trials,
        "kernels": [{"batch": b, "kernel": r.task.name, "workload": r.task.workload, "weight": r.task.weight,
                     "template": r.template, "best_ms": ms(r.best_cost), "best_index": r.best_index,
                     "measured": r.measured, "resumed": r.resumed, "errors": dict(r.errors)} for b, r in results],
        "trials": measured, "compile_errors": errs, "compile_error_rate": errs / measured if measured else None,
        "model": None if times is None else [{"batch": b, **t.to_json()} for b, t in times],
    }
    try:
        Path(args.json).write_text(json.dumps(doc, indent=2) + "\n")
    except OSError as e:
        raise write_failed(args.json, "--json", e) from None


def run(args: argparse.Namespace) -> int:
    from ..tune.builder import LocalBuilder
    from ..tune.runner import LocalRunner
    from ..schedules.space import KnobError
    from ..tune.database import records_elsewhere
    from ..tune.loop import tune
    from .build import build_options, graph_options, load_graph, load_graphs, resolve_target

    _check_budget(args)
    if args.json:
        from .paths import check_output_path

        check_output_path(args.json, "--json")
    if args.log is not None:  # before loading the model: a log that cannot be written loses the run
        from ..tune.database import Database

        Database(args.log).check_writable()
    target = resolve_target(args.target)
    from ..driver import prepare_graph

    # the kernels `build --precision` makes: precision converted, and NHWC for fp16/bf16/tf32 on CUDA
    raw_graphs = load_graphs(args) or {None: load_graph(args)}
    horizontal = build_options(args).horizontal
    graphs = {b: prepare_graph(g, target, horizontal=horizontal, **graph_options(args, g))
              for b, g in raw_graphs.items()}
    runner = _runner(args, target)
    compare = args.compare if args.compare is not None else args.minutes is not None
    if compare and runner is not None:
        log.info("the model is not timed untuned against tuned: its kernels were measured elsewhere")
        compare = False
    bars = _TuneBars()
    builder = LocalBuilder(n_parallel=args.parallel)
    runner = runner or LocalRunner()
    results, report = [], None
    covered = records_elsewhere(args.log) if args.untuned_only else None
    try:
        if args.minutes is not None:
            results, report = _tune_within(args, graphs, target, builder, runner)
        for k, (b, graph) in enumerate(graphs.items() if args.minutes is None else (), 1):
            if b is not None:
                bars.close()
                bars.label = f" (batch {b})"
                log.info("batch %d (%d of %d)", b, k, len(graphs))
            try:
                found = tune(graph, target, trials=args.trials, tuner=args.tuner, log=args.log,
                             early_stopping=args.early_stopping, seed=args.seed, builder=builder,
                             runner=runner, progress=bars.update, only=dict(args.only), covered=covered)
            except KnobError as e:
                raise UsageError(f"--only: {e}") from None
            results += [(b, r) for r in found]
    finally:
        bars.close()
        builder.close()
        runner.close()
    if hasattr(runner, "summary"):
        print(runner.summary())
    for b, r in results:
        best = f"{r.best_cost * 1e3:.4f} ms (#{r.best_index})" if math.isfinite(r.best_cost) else "no valid config"
        errs = ", ".join(f"{k}: {v}" for k, v in sorted(r.errors.items())) or "no errors"
        where = "" if b is None else f"batch {b}: "
        print(f"{where}{r.task.name} [{r.template}]: best {best}; {r.measured} measured, "
              f"{r.resumed} from the log; {errs}")
    if report is not None:
        print("\n".join(_budget_lines(report)))
    print(_error_rate_line(results))
    times = _compare(args, raw_graphs, target) if compare and results else None
    for b, t in times or ():
        print(_times_line(b, t))
    if args.json:
        _write_json(args, target, results, report, times)
    return 0 if any(math.isfinite(r.best_cost) for _, r in results) or not results else 1
