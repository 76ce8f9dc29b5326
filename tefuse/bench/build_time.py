"""Cold build time: each model built in a fresh process with no kernel cache, as a user's first
`tefuse build` is, split into where the seconds go.

    python -m tefuse.bench.build_time --target cuda:sm_90 --precision fp16 --json build_time.json
    python -m tefuse.bench.build_time --models densenet121 --schedule-threads 16,8,4,2,1 --json sweep.json

Each model of the zoo list (`tefuse.bench.zoo`, exported once beforehand and not timed) is built
by a child process that reports: importing tefuse (and TVM), importing the ONNX model, the graph
passes, fusion and scheduling (Python and TVM's schedule primitives), and code generation
with the device compiler (parallel, `--jobs`); `wall_s` is the child's whole life as the parent
saw it, interpreter start-up included. A CUDA build needs nvcc or NVRTC, not a GPU: the numbers
say how long a user waits on this machine's cores (`cpus` in the report). `--schedule-threads`
builds each model once for each count of scheduling threads (TEFUSE_SCHEDULE_JOBS), the rows
marked with it: what the driver's MAX_SCHEDULE_JOBS is chosen by.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional, Sequence

log = logging.getLogger(__name__)

DEFAULT_MODELS = ("resnet50", "resnext50_32x4d", "densenet121", "efficientnet_b0", "mobilenet_v3_large",
                  "convnext_tiny", "swin_t", "vit_b_16")
CHILD_TIMEOUT_S = 1800


@dataclass
class BuildTime:
    model: str
    precision: str
    status: str  # ok, or the child's last error line
    kernels: int = 0
    compiled: int = 0
    import_s: float = 0.0  # import tefuse (and TVM)
    onnx_s: float = 0.0  # import_onnx
    graph_s: float = 0.0  # graph passes (precision, layout, weights)
    schedule_s: float = 0.0  # fusion and scheduling
    compile_s: float = 0.0  # codegen and the device compiler
    wall_s: float = 0.0  # the child process, start to end
    schedule_threads: int = 0  # TEFUSE_SCHEDULE_JOBS the child ran under (0: the build's default)


def child(model_path: str, target: str, precision: str, jobs: Optional[int]) -> dict:
    """Build one model in this (fresh) process; the phases' seconds."""
    t0 = time.perf_counter()
    import onnx

    import tefuse
    from tefuse.frontend.onnx import import_onnx

    t1 = time.perf_counter()
    graph = import_onnx(onnx.load(model_path))
    t2 = time.perf_counter()
    cg = tefuse.build(graph, target, precision=precision, jobs=jobs, cache=None)
    bt = cg.build_times
    return dict(kernels=bt.kernels, compiled=bt.compiled, import_s=t1 - t0, onnx_s=t2 - t1, graph_s=bt.graph_s,
                schedule_s=bt.schedule_s, compile_s=bt.compile_s)


def measure(name: str, model_path: Path, target: str, precision: str, jobs: Optional[int],
            schedule_threads: int = 0) -> BuildTime:
    cmd = [sys.executable, "-m", "tefuse.bench.build_time", "--child", str(model_path), "--target", target,
           "--precision", precision] + (["--jobs", str(jobs)] if jobs else [])
    env = dict(os.environ, **({"TEFUSE_SCHEDULE_JOBS": str(schedule_threads)} if schedule_threads else {}))
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        return BuildTime(name, precision, f"timed out after {CHILD_TIMEOUT_S} s", wall_s=time.perf_counter() - t0,
                         schedule_threads=schedule_threads)
    wall = time.perf_counter() - t0
    lines = p.stdout.strip().splitlines()
    if p.returncode != 0 or not lines:
        last = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
        return BuildTime(name, precision, last[:300], wall_s=wall, schedule_threads=schedule_threads)
    return BuildTime(name, precision, "ok", wall_s=wall, schedule_threads=schedule_threads, **json.loads(lines[-1]))


def result_line(r: BuildTime) -> str:
    if r.status != "ok":
        return f"{r.model} {r.precision}: {r.status}"
    return (f"{r.model} {r.precision}: {r.wall_s:.1f}s cold ({r.kernels} kernels, {r.compiled} compiled): import "
            f"{r.import_s:.1f}s, onnx {r.onnx_s:.1f}s, graph {r.graph_s:.1f}s, schedule {r.schedule_s:.1f}s, "
            f"compile {r.compile_s:.1f}s")


def compiler_version() -> str:
    try:
        out = subprocess.run(["nvcc", "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "no nvcc (NVRTC)"
    return out.strip().splitlines()[-1] if out.strip() else "nvcc"


def merge_reports(reports: Sequence[dict]) -> dict:
    """Several runs' reports as one: a later run's (model, precision) row replaces an earlier
    one's, each row names the command that measured it (`command`), and `commands` lists them
    all. Runs of one table share their machine facts (target, cores, device compiler, compile
    mode): reports that differ in them are refused (ValueError)."""
    rows: dict[tuple, dict] = {}
    commands: list[str] = []
    facts = {k: v for k, v in reports[0].items() if k not in ("command", "commands", "results")}
    for report in reports:
        theirs = {k: v for k, v in report.items() if k not in ("command", "commands", "results")}
        if theirs != facts:
            differ = sorted(k for k in facts.keys() | theirs.keys() if facts.get(k) != theirs.get(k))
            raise ValueError(f"the runs were made on different setups ({', '.join(differ)} differ)")
        runs = report.get("commands") or [report["command"]]
        commands += [c for c in runs if c not in commands]
        for r in report["results"]:
            key = (r["model"], r["precision"], r.get("schedule_threads", 0))
            rows[key] = {**r, "command": r.get("command", runs[-1])}
    return {"commands": commands, **facts, "results": list(rows.values())}


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(DEFAULT_MODELS), help="comma-separated zoo names")
    p.add_argument("--target", "-t", default="cuda")
    p.add_argument("--precision", default="fp16", help="comma-separated: fp32,fp16")
    p.add_argument("--jobs", "-j", type=int, default=None, help="parallel compiles (default: the build's)")
    p.add_argument("--schedule-threads", default=None, metavar="N,N,...",
                   help="build each model once per count of scheduling threads (TEFUSE_SCHEDULE_JOBS)")
    p.add_argument("--json", default=None)
    p.add_argument("--merge", nargs="+", default=None, metavar="REPORT",
                   help="merge these reports into --json (later runs' rows replace earlier ones') and exit")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.merge:
        if not args.json:
            p.error("--merge needs --json")
        try:
            merged = merge_reports([json.loads(Path(f).read_text()) for f in args.merge])
        except (OSError, ValueError, KeyError) as e:
            p.error(f"--merge: {e}")
        Path(args.json).write_text(json.dumps(merged, indent=1) + "\n")
        return 0
    if args.child:
        print(json.dumps(child(args.child, args.target, args.precision, args.jobs)))
        return 0
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    from . import zoo

    names = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = sorted(set(names) - set(zoo.names()))
    if unknown:
        p.error(f"unknown models {unknown}; the zoo has {', '.join(zoo.names())}")
    try:
        sweep = [int(n) for n in args.schedule_threads.split(",")] if args.schedule_threads else [0]
    except ValueError:
        p.error(f"--schedule-threads {args.schedule_threads!r}: whole numbers, comma-separated")
    if any(n < 1 for n in sweep):
        p.error("--schedule-threads: counts must be 1 or more")
    from ..driver import default_jobs, schedule_jobs, usable_cpus
    from ..errors import BuildError

    try:  # before measuring: a bad TEFUSE_SCHEDULE_JOBS is one line now, not after every build
        threads = {"schedule": schedule_jobs(args.jobs), "compile": args.jobs or default_jobs()}
    except BuildError as e:
        p.error(str(e))
    results = []
    for name in names:
        path = zoo.export(zoo.entry(name), small=False)
        for precision in args.precision.split(","):
            for n in sweep:
                r = measure(name, path, args.target, precision, args.jobs, n)
                log.info("%s%s", result_line(r), f" ({n} scheduling threads)" if n else "")
                results.append(r)
    report = {"command": "python -m tefuse.bench.build_time " + " ".join(argv if argv is not None else sys.argv[1:]),
              "target": args.target, "cpus": usable_cpus(),
              "threads": threads,
              "device_compiler": compiler_version(),
              "compile_mode": os.environ.get("TVM_CUDA_COMPILE_MODE", ""),
              "results": [asdict(r) for r in results]}
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    return 0 if all(r.status == "ok" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
