"""Tuning study on the GPU: XGBoost vs random search on the same budget, and tuned vs
fallback vs the peer, measured side by side in one run.

    python -m tefuse.bench.tuning --trials 96 --workdir study/ --json study.json

For each chain (by default conv2d+bias+batch_norm+relu at three ResNet-50 shapes) it tunes
once with each tuner into its own log (no transfer, same seed), reports how many trials each
needed to come within 5% of the best time either found, then times the fallback config, the
tuned config and PyTorch/cuDNN in the same process (`bench_chain`), as ratios.
"""
from __future__ import annotations

import argparse
import json
import logging
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

log = logging.getLogger(__name__)

CHAIN = "conv2d(k={k},r=3,pad=1)+bias+batch_norm+relu"
RESNET50_SHAPES = [(1, 64, 56, 56), (1, 128, 28, 28), (1, 256, 14, 14)]


@dataclass
class TunerRun:
    tuner: str
    best_ms: float
    trials: int
    curve_ms: list[float] = field(default_factory=list)  # best so far after each trial

    def trials_to_within(self, target_ms: float) -> Optional[int]:
        for k, v in enumerate(self.curve_ms):
            if v <= target_ms:
                return k + 1
        return None


@dataclass
class StudyResult:
    spec: str
    input: tuple
    runs: list[TunerRun]
    best_ms: float  # the best either tuner found
    within5: dict[str, Optional[int]]  # trials each tuner needed to reach 1.05 x best_ms
    fallback_ms: float  # measured side by side with the two below
    tuned_ms: float
    peer_ms: Optional[float]
    max_rel_err: Optional[float]

    @property
    def tuned_speedup(self) -> float:
        return self.fallback_ms / self.tuned_ms


def _curve(history: list[float]) -> list[float]:
    best, out = math.inf, []
    for c in history:
        best = min(best, c)
        out.append(best * 1e3)
    return out


def tune_one(spec: str, shape: tuple, tuner: str, trials: int, log_path: Path, seed: int,
             builder, runner, target: str = "cuda") -> TunerRun:
    from ..plan.spec import parse_chain
    from ..tune.loop import tune

    graph = parse_chain(spec, shape, "float32", "NCHW")
    results = tune(graph, target, trials=trials, tuner=tuner, log=str(log_path), seed=seed,
                   builder=builder, runner=runner, transfer=False)
    # several templates share the budget: their trials, in the order they were tuned
    history = [c for r in results for c in r.history]
    best = min((r.best_cost for r in results), default=math.inf)
    return TunerRun(tuner, best * 1e3, len(history), _curve(history))


def study(shapes=RESNET50_SHAPES, trials: int = 96, workdir: Path = Path("."), seed: int = 0,
          tuners=("xgb", "random"), target: str = "cuda") -> list[StudyResult]:
    from ..bench.chain import bench_chain
    from ..tune.builder import LocalBuilder
    from ..tune.database import LayeredDatabase, open_database
    from ..tune.runner import LocalRunner

    out = []
    with LocalBuilder() as builder:
        runner = LocalRunner()
        try:
            for shape in shapes:
                spec = CHAIN.format(k=shape[1])
                paths = [workdir / f"tune_{t}_{'x'.join(map(str, shape))}.jsonl" for t in tuners]
                runs = []
                for t, path in zip(tuners, paths):
                    runs.append(tune_one(spec, shape, t, trials, path, seed, builder, runner, target))
                    log.info("%s %s %s: best %.4f ms after %d trials", spec, shape, t, runs[-1].best_ms,
                             runs[-1].trials)
                best = min(r.best_ms for r in runs)
                within = {r.tuner: r.trials_to_within(best * 1.05) for r in runs}
                db = LayeredDatabase([open_database(p) for p in paths])
                fb = bench_chain(spec, shape, target=target, db=None)
                tuned = bench_chain(spec, shape, target=target, db=db)
                out.append(StudyResult(spec, tuple(shape), runs, best, within, fb.fused_ms, tuned.fused_ms,
                                       tuned.peer_ms, tuned.max_rel_err))
                print(result_line(out[-1]), flush=True)
        finally:
            runner.close()
    return out


def result_line(r: StudyResult) -> str:
    w = ", ".join(f"{t} {n if n is not None else '-'}/{run.trials}" for (t, n), run in zip(r.within5.items(), r.runs))
    peer = f"cuDNN {r.peer_ms:.4f} ms, tuned/cuDNN {r.tuned_ms / r.peer_ms:.2f}x" if r.peer_ms else "no peer"
    return (f"{r.spec} {r.input}: best {r.best_ms:.4f} ms; trials to within 5%: {w} | "
            f"fallback {r.fallback_ms:.4f} ms, tuned {r.tuned_ms:.4f} ms ({r.tuned_speedup:.2f}x) | {peer} | "
            f"max rel err {r.max_rel_err}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=96)
    p.add_argument("--shape", action="append", default=None, help="NxCxHxW (repeatable); ResNet-50's by default")
    p.add_argument("--workdir", default=".")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None)
    p.add_argument("--target", default="cuda")
    args = p.parse_args(argv)
    from ..plan.spec import parse_shape

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    shapes = [parse_shape(x) for x in args.shape] if args.shape else RESNET50_SHAPES
    res = study(shapes, args.trials, Path(args.workdir), args.seed, target=args.target)
    if args.json:
        Path(args.json).write_text(json.dumps(
            [{**asdict(r), "tuned_speedup": r.tuned_speedup} for r in res], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
