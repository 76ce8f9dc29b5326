"""Tuning throughput with 1 vs N devices: the same job (ResNet-50's kernels, tuner, seed,
trials per kernel) measured on one GPU, then spread over several, trials per minute for each.

    python -m tefuse.bench.scaleout --devices 0 --devices 0,1 --trials 16 --json scaleout.json
    python -m tefuse.bench.scaleout --devices 0 --rpc HOST:PORT --key KEY --trials 16 --json rpc.json

Each run tunes into a fresh log (nothing resumed), so every run measures the whole budget.
The model defaults to the ONNX package's light ResNet-50 (ResNet-50's shapes at batch 1,
constant weights: enough for tuning, whose inputs are seeded random values); `--model` takes
any ONNX file, `--kernels N` keeps the first N tuning tasks. Besides wall time, each result
splits it into building (CPU, parallel) and measuring (the devices), since only the second
scales with devices: with B build seconds and M measuring seconds on one device, N devices
can at best reach (B + M) / (B + M / N).
"""
from __future__ import annotations

import argparse
import json
import logging
import math
import os
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional, Sequence

log = logging.getLogger(__name__)


def zoo_resnet50() -> str:
    import onnx

    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light", "light_resnet50.onnx")


@dataclass
class ScaleoutResult:
    devices: str  # "0", "0,1", or "rpc:KEY@HOST:PORT"
    n_devices: int
    target: str
    model: str
    tasks: int
    trials: int  # measurements made (every config of the budget, errors included)
    seconds: float  # wall time of the tuning call
    build_seconds: float  # of which: waiting for builds
    measure_seconds: float  # of which: waiting for the devices
    errors: dict[str, int] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)  # candidates per device
    retried: int = 0
    tasks_at_once: Optional[int] = None  # None: tune()'s default
    min_repeat_ms: Optional[int] = None  # None: the runner's default
    busy: dict[str, float] = field(default_factory=dict)  # seconds each device spent measuring

    @property
    def device_use(self) -> dict[str, float]:
        """Fraction of the wall time each device was measuring: below 1, it waited for builds."""
        return {k: v / self.seconds for k, v in self.busy.items()} if self.seconds > 0 else {}

    @property
    def trials_per_minute(self) -> float:
        return 60.0 * self.trials / self.seconds if self.seconds > 0 else math.nan


class _Timed:
    """Wraps a builder or runner, adding up the seconds spent in one of its methods."""

    def __init__(self, inner, method: str) -> None:
        self._inner, self._method, self.seconds = inner, method, 0.0

    def __getattr__(self, name):
        attr = getattr(self._inner, name)
        if name != self._method:
            return attr

        def timed(*a, **kw):
            t0 = time.perf_counter()
            try:
                return attr(*a, **kw)
            finally:
                self.seconds += time.perf_counter() - t0

        return timed


def tasks_of(model: str, target: str, kernels: Optional[int] = None):
    from ..frontend.onnx import import_onnx
    from ..tune.task import extract_tasks

    tasks = extract_tasks(import_onnx(model), target)
    return tasks[:kernels] if kernels else tasks


def run_once(tasks, devices: Optional[Sequence[int]] = None, *, rpc: Optional[str] = None,
             key: Optional[str] = None, trials: int = 16, tuner: str = "xgb", seed: int = 0,
             parallel: Optional[int] = None, log_path: Optional[Path] = None, model: str = "",
             tasks_at_once: Optional[int] = None, **runner_options) -> ScaleoutResult:
    """Tune `tasks` once, measuring on local `devices` or on every RPC server under `key`."""
    from ..target import target_key
    from ..tune.builder import LocalBuilder
    from ..tune.loop import tune
    from ..tune.parallel import local_devices_runner

    kind = tasks[0].target.kind.name
    if rpc:
        from ..tune.rpc import RPCRunner, parse_address

        inner = RPCRunner(key=key, tracker=parse_address(rpc), **runner_options)
        label = f"rpc:{key}@{rpc}"
    else:
        inner = local_devices_runner(devices or [0], kind, **runner_options)
        label = ",".join(map(str, devices or [0]))
    own_log = log_path is None
    if own_log:
        fd, name = tempfile.mkstemp(prefix="tefuse-scaleout-", suffix=".jsonl")
        os.close(fd)
        log_path = Path(name)
    log_path.unlink(missing_ok=True)  # a fresh log: the whole budget is measured
    builder = _Timed(LocalBuilder(n_parallel=parallel), "build")
    runner = _Timed(inner, "run")
    try:
        # devices opened, measuring processes and build workers started before the clock starts
        n_devices = inner.parallelism
        inner.warm(kind)
        builder._inner.warm(kind)
        t0 = time.perf_counter()
        results = tune(tasks, tasks[0].target, trials=trials, tuner=tuner, log=str(log_path), seed=seed,
                       builder=builder, runner=runner, transfer=False,
                       tasks_at_once=tasks_at_once)
        seconds = time.perf_counter() - t0
    finally:
        builder._inner.close()
        inner.close()
        if own_log:
            log_path.unlink(missing_ok=True)
    errors: dict[str, int] = {}
    for r in results:
        for k, v in r.errors.items():
            errors[k] = errors.get(k, 0) + v
    return ScaleoutResult(label, n_devices, target_key(tasks[0].target), model, len(tasks),
                          sum(r.measured for r in results), seconds, builder.seconds, runner.seconds,
                          errors, dict(inner.counts), inner.retried, tasks_at_once,
                          runner_options.get("min_repeat_ms"), dict(inner.busy))


def servers_listed(rpc: str, key: Optional[str]) -> int:
    """How many servers the tracker at `rpc` holds free under `key`."""
    from ..tune.rpc import parse_address, tracker_summary

    return int(tracker_summary(parse_address(rpc))["queue_info"].get(key, {}).get("free", 0))


def result_line(r: ScaleoutResult) -> str:
    errs = ", ".join(f"{k} {v}" for k, v in sorted(r.errors.items())) or "no errors"
    use = ", ".join(f"{k} {v:.0%}" for k, v in sorted(r.device_use.items()))
    return (f"devices {r.devices}: {r.trials} trials of {r.tasks} kernels in {r.seconds:.1f} s = "
            f"{r.trials_per_minute:.1f} trials/min (building {r.build_seconds:.1f} s, measuring "
            f"{r.measure_seconds:.1f} s); per device {r.counts}, measuring {use}; {errs}")


def report(runs: Sequence[ScaleoutResult]) -> dict:
    """What --json writes: every run, and each run's trials/minute relative to the first."""
    out: dict = {"runs": [{**asdict(r), "trials_per_minute": r.trials_per_minute, "device_use": r.device_use}
                          for r in runs]}
    if len(runs) > 1:
        out["speedup_vs_first"] = [r.trials_per_minute / runs[0].trials_per_minute for r in runs]
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--devices", action="append", default=None, metavar="0,1,...",
                   help="local device indices; repeat to compare (e.g. --devices 0 --devices 0,1)")
    p.add_argument("--rpc", default=None, metavar="HOST:PORT",
                   help="also a tracker's servers under --key, after the --devices runs")
    p.add_argument("--key", default=None)
    p.add_argument("--servers", type=int, default=None,
                   help="the servers the tracker must list under --key (one a GPU): a server left from an "
                        "earlier run would share a GPU with another and their timings with it")
    p.add_argument("--model", default=None, help="ONNX model (default: the ONNX zoo's light ResNet-50)")
    p.add_argument("--target", "-t", default="cuda")
    p.add_argument("--trials", type=int, default=16, help="per kernel (default 16)")
    p.add_argument("--kernels", type=int, default=None, help="tune only the first N kernels")
    p.add_argument("--tuner", default="xgb", choices=["xgb", "random", "grid"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--parallel", "-j", type=int, default=None, help="parallel builds (default: CPU count)")
    p.add_argument("--tasks-at-once", type=int, default=None,
                   help="kernels tuned concurrently (default: 8 a device; 1: build and measure take turns)")
    p.add_argument("--min-repeat-ms", type=int, default=None,
                   help="each timing repeat lasts at least this long (runner default 20; AutoTVM's CUDA tutorials use 150)")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    logging.getLogger("tefuse.tune.loop").setLevel(logging.WARNING)

    from ..target import make_target

    model = args.model or zoo_resnet50()
    tasks = tasks_of(model, make_target(args.target), args.kernels)
    runs = []
    extra = {"tasks_at_once": args.tasks_at_once}
    if args.min_repeat_ms is not None:
        extra["min_repeat_ms"] = args.min_repeat_ms
    if args.servers is not None and not (args.rpc and args.key):
        p.error("--servers counts a tracker's servers: it needs --rpc and --key")
    if args.rpc and args.servers is not None:
        listed = servers_listed(args.rpc, args.key)
        if listed != args.servers:
            p.error(f"the tracker at {args.rpc} lists {listed} free server(s) under {args.key!r}, not --servers "
                    f"{args.servers}")
    for spec in args.devices or ([] if args.rpc else ["0"]):
        devices = [int(i) for i in spec.split(",") if i.strip()]
        runs.append(run_once(tasks, devices, trials=args.trials, tuner=args.tuner, seed=args.seed,
                             parallel=args.parallel, model=model, **extra))
        print(result_line(runs[-1]), flush=True)
    if args.rpc:  # after the local runs: the first run is what the others are compared to
        runs.append(run_once(tasks, rpc=args.rpc, key=args.key, trials=args.trials, tuner=args.tuner,
                             seed=args.seed, parallel=args.parallel, model=model, **extra))
        print(result_line(runs[-1]), flush=True)
    out = report(runs)
    if len(runs) > 1:
        print("trials/min relative to the first run: " +
              ", ".join(f"{r.devices} {s:.2f}x" for r, s in zip(runs, out["speedup_vs_first"])))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
