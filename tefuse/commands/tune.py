"""`tefuse tune`: autotune a chain spec's or an ONNX model's kernels, appending to a log.

    tefuse tune "conv2d(k=64,r=3,pad=1)+bias+batch_norm+relu" --target cuda --trials 64 \\
        --tuner xgb --log tune.jsonl [--early-stopping 32]

Rerunning the same command resumes: configs already in the log are not measured again.
Measuring on several GPUs, each batch spread over them (one candidate per GPU at a time):

    tefuse tune ... --devices 0,1                 # this machine's GPUs 0 and 1
    tefuse tune ... --rpc HOST:PORT --key KEY     # every TVM RPC server under KEY at that tracker
"""
from __future__ import annotations

import argparse
import logging
import math
import sys

from ..errors import TefuseError
from ..target import make_target

log = logging.getLogger(__name__)


def add_parser(sub) -> None:
    from .build import add_common

    p = sub.add_parser("tune", help="autotune the kernels of a chain spec or ONNX model")
    add_common(p)
    p.add_argument("--trials", "-n", type=int, default=64, help="measurements per kernel (default 64)")
    p.add_argument("--tuner", default="xgb", choices=["xgb", "random", "grid"])
    p.add_argument("--log", "-l", default=None,
                   help="tuning log (JSON lines) to append to and resume from (default: the user database)")
    p.add_argument("--early-stopping", type=int, default=None, metavar="N",
                   help="stop a kernel after N trials without improvement")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--parallel", "-j", type=int, default=None, help="parallel builds (default: CPU count)")
    p.add_argument("--rpc", "--rpc-tracker", dest="rpc", default=None, metavar="HOST:PORT",
                   help="measure on every TVM RPC server registered under --key with this tracker, in parallel")
    p.add_argument("--key", "--rpc-key", dest="key", default=None, help="device key of the RPC servers")
    p.add_argument("--devices", default=None, metavar="0,1,...",
                   help="measure on these local devices in parallel, one process pinned to each")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def _graph(args: argparse.Namespace):
    if args.spec.endswith(".onnx"):
        try:
            from ..frontend.onnx import import_onnx
        except ImportError as e:
            raise TefuseError(f"ONNX import is not available: {e}") from None
        return import_onnx(args.spec)
    from ..plan.spec import parse_chain, parse_shape

    return parse_chain(args.spec, parse_shape(args.input), args.dtype, args.layout)


def _progress_bar(disabled: bool):
    """A tqdm bar per kernel when tqdm is installed and stderr is a terminal, else None."""
    if disabled or not sys.stderr.isatty():
        return None, lambda: None
    try:
        from tqdm import tqdm
    except ImportError:
        return None, lambda: None
    bars: dict[str, object] = {}

    def update(name: str, done: int, total: int, best: float) -> None:
        bar = bars.get(name)
        if bar is None:
            bar = bars[name] = tqdm(total=total, desc=name[:30], leave=True)
        bar.n = done
        bar.set_postfix_str(f"best {best * 1e3:.4f} ms" if math.isfinite(best) else "best -")
        bar.refresh()

    return update, lambda: [b.close() for b in bars.values()]


def _runner(args: argparse.Namespace, target):
    """--rpc/--key or --devices: a runner over several devices; else None (the local device)."""
    if args.rpc and args.devices:
        raise TefuseError("--rpc and --devices exclude each other")
    if args.rpc:
        from ..tune.rpc import RPCRunner, parse_address

        if not args.key:
            raise TefuseError("--rpc needs --key (the key the servers registered under)")
        try:
            return RPCRunner(key=args.key, tracker=parse_address(args.rpc))
        except ValueError as e:
            raise TefuseError(f"--rpc: {e}") from None
    if args.devices:
        from ..target import has_gpu
        from ..tune.parallel import local_devices_runner

        try:
            indices = [int(i) for i in args.devices.split(",") if i.strip()]
        except ValueError:
            raise TefuseError(f"--devices: expected indices such as 0,1, got {args.devices!r}") from None
        kind = target.kind.name
        missing = [i for i in indices if kind != "llvm" and not has_gpu(kind, i)]
        if missing or not indices:
            raise TefuseError(f"--devices: no {kind} device {', '.join(map(str, missing)) or '(none given)'}")
        return local_devices_runner(indices, kind)
    return None


def run(args: argparse.Namespace) -> int:
    from ..tune.builder import LocalBuilder
    from ..tune.runner import LocalRunner
    from ..tune.loop import tune

    if args.trials < 1:
        raise TefuseError("--trials must be at least 1")
    target = make_target(args.target)
    graph = _graph(args)
    runner = _runner(args, target)
    progress, close_bars = _progress_bar(args.no_progress)
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
    if hasattr(runner, "summary"):
        print(runner.summary())
    for r in results:
        best = f"{r.best_cost * 1e3:.4f} ms (#{r.best_index})" if math.isfinite(r.best_cost) else "no valid config"
        errs = ", ".join(f"{k}: {v}" for k, v in sorted(r.errors.items())) or "no errors"
        print(f"{r.task.name} [{r.template}]: best {best}; {r.measured} measured, "
              f"{r.resumed} from the log; {errs}")
    return 0 if any(math.isfinite(r.best_cost) for r in results) or not results else 1
