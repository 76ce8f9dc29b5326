"""`tefuse tune`: autotune a chain spec's or an ONNX model's kernels, appending to a log.

    tefuse tune "conv2d(k=64,r=3,pad=1)+bias+batch_norm+relu" --target cuda --trials 64 \\
        --tuner xgb --log tune.jsonl [--early-stopping 32]

With `--batch 1,8,32` the kernels of every batch size are tuned, into the one log (what
`tefuse build --batch 1,8,32` then finds).
Rerunning the same command resumes: configs already in the log are not measured again.
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
    from .build import add_batch_option, add_common, add_precision_option

    p = sub.add_parser("tune", help="autotune the kernels of a chain spec or ONNX model")
    add_common(p)
    add_batch_option(p)
    add_precision_option(p)
    p.add_argument("--trials", "-n", type=int, default=64, help="measurements per kernel (default 64)")
    p.add_argument("--tuner", default="xgb", choices=["xgb", "random", "grid"])
    add_only_option(p)
    p.add_argument("--log", "-l", default=None,
                   help="tuning log (JSON lines) to append to and resume from (default: the user database); "
                        "refused before tuning when it cannot be written")
    p.add_argument("--early-stopping", type=int, default=None, metavar="N",
                   help="stop a kernel after N trials without improvement")
    p.add_argument("--seed", type=int, default=0)
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


def run(args: argparse.Namespace) -> int:
    from ..tune.builder import LocalBuilder
    from ..tune.runner import LocalRunner
    from ..schedules.space import KnobError
    from ..tune.loop import tune
    from .build import graph_options, load_graph, load_graphs, resolve_target

    if args.trials < 1:
        raise UsageError("--trials must be at least 1")
    if args.log is not None:  # before loading the model: a log that cannot be written loses the run
        from ..tune.database import Database

        Database(args.log).check_writable()
    target = resolve_target(args.target)
    from ..driver import prepare_graph

    # the kernels `build --precision` makes: precision converted, and NHWC for fp16/bf16/tf32 on CUDA
    graphs = load_graphs(args) or {None: load_graph(args)}
    graphs = {b: prepare_graph(g, target, **graph_options(args)) for b, g in graphs.items()}
    runner = _runner(args, target)
    bars = _TuneBars()
    builder = LocalBuilder(n_parallel=args.parallel)
    runner = runner or LocalRunner()
    results = []
    try:
        for k, (b, graph) in enumerate(graphs.items(), 1):
            if b is not None:
                bars.close()
                bars.label = f" (batch {b})"
                log.info("batch %d (%d of %d)", b, k, len(graphs))
            try:
                found = tune(graph, target, trials=args.trials, tuner=args.tuner, log=args.log,
                             early_stopping=args.early_stopping, seed=args.seed, builder=builder,
                             runner=runner, progress=bars.update, only=dict(args.only))
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
    return 0 if any(math.isfinite(r.best_cost) for _, r in results) or not results else 1
