"""`tefuse tune`: autotune a chain spec's or an ONNX model's kernels, appending to a log.

    tefuse tune "conv2d(k=64,r=3,pad=1)+bias+batch_norm+relu" --target cuda --trials 64 \\
        --tuner xgb --log tune.jsonl [--early-stopping 32]

Rerunning the same command resumes: configs already in the log are not measured again.
"""
from __future__ import annotations

import argparse
import logging
import math

from . import UsageError

log = logging.getLogger(__name__)


def add_parser(sub) -> None:
    from .build import add_common, add_precision_option

    p = sub.add_parser("tune", help="autotune the kernels of a chain spec or ONNX model")
    add_common(p)
    add_precision_option(p)
    p.add_argument("--trials", "-n", type=int, default=64, help="measurements per kernel (default 64)")
    p.add_argument("--tuner", default="xgb", choices=["xgb", "random", "grid"])
    p.add_argument("--log", "-l", default=None,
                   help="tuning log (JSON lines) to append to and resume from (default: the user database)")
    p.add_argument("--early-stopping", type=int, default=None, metavar="N",
                   help="stop a kernel after N trials without improvement")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--parallel", "-j", type=int, default=None, help="parallel builds (default: CPU count)")
    p.add_argument("--rpc-tracker", default=None, metavar="HOST:PORT", help="measure through an RPC tracker")
    p.add_argument("--rpc-key", default=None, help="device key registered with the tracker")
    p.set_defaults(func=run)


def _progress_bar():
    """(progress callback for tune(), close): one bar for the kernel being tuned, replaced by
    the next kernel's; off when stderr is not a terminal or with --no-progress."""
    from . import progress as P

    if not P.enabled():
        return None, lambda: None
    state: dict = {}

    def update(name: str, done: int, total: int, best: float) -> None:
        if state.get("name") != name:
            P.close(state.get("bar"))
            state["name"], state["bar"] = name, P.bar(total, f"tuning {name[:40]}", unit="trial")
        b = state["bar"]
        if b is None:
            return
        b.total = total
        b.n = done
        b.set_postfix_str(f"best {best * 1e3:.4f} ms" if math.isfinite(best) else "best -", refresh=False)
        b.refresh()

    return update, lambda: P.close(state.get("bar"))


def run(args: argparse.Namespace) -> int:
    from ..tune.builder import LocalBuilder
    from ..tune.runner import LocalRunner
    from ..tune.loop import tune
    from .build import load_graph, resolve_target

    if args.trials < 1:
        raise UsageError("--trials must be at least 1")
    target = resolve_target(args.target)
    graph = load_graph(args)
    if args.precision != "fp32":
        from ..graph.precision import convert_precision

        graph = convert_precision(graph, args.precision)  # tune the kernels `build --precision` makes
    runner = None
    if args.rpc_tracker:
        from ..tune.rpc import RPCRunner

        host, _, port = args.rpc_tracker.rpartition(":")
        if not port.isdigit():
            raise UsageError(f"--rpc-tracker {args.rpc_tracker!r}: expected HOST:PORT")
        runner = RPCRunner(key=args.rpc_key, tracker=(host or "127.0.0.1", int(port)))
    progress, close_bars = _progress_bar()
    builder = LocalBuilder(n_parallel=args.parallel)
    runner = runner or LocalRunner()
    try:
        results = tune(graph, target, trials=args.trials, tuner=args.tuner, log=args.log,
                       early_stopping=args.early_stopping, seed=args.seed, builder=builder,
                       runner=runner, progress=progress)
    finally:
        close_bars()
        builder.close()
        runner.close()
    for r in results:
        best = f"{r.best_cost * 1e3:.4f} ms (#{r.best_index})" if math.isfinite(r.best_cost) else "no valid config"
        errs = ", ".join(f"{k}: {v}" for k, v in sorted(r.errors.items())) or "no errors"
        print(f"{r.task.name} [{r.template}]: best {best}; {r.measured} measured, "
              f"{r.resumed} from the log; {errs}")
    return 0 if any(math.isfinite(r.best_cost) for r in results) or not results else 1
