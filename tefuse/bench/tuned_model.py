"""A whole model's time with its untuned (fallback) configs against its tuned ones: both builds
made in this process and timed in turns, so that the ratio is what tuning bought."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class ModelTimes:
    """Median ms of one model run, untuned and tuned, and how many kernels took a record."""

    untuned_ms: float
    tuned_ms: float
    runs: int  # timed runs of each build
    kernels: int
    tuned_kernels: int

    @property
    def speedup(self) -> float:
        return self.untuned_ms / self.tuned_ms if self.tuned_ms > 0 else float("nan")

    def to_json(self) -> dict:
        return {"untuned_ms": self.untuned_ms, "tuned_ms": self.tuned_ms, "speedup": self.speedup,
                "runs": self.runs, "kernels": self.kernels, "tuned_kernels": self.tuned_kernels}


def time_untuned_and_tuned(graph, target, db, *, runs: int = 20, warmup: int = 3, cache=None,
                           jobs: Optional[int] = None, **options) -> ModelTimes:
    """Build `graph` without records and with `db`'s best, then time the two in turns (inputs
    already on the device, each run synchronised). options: driver.build's graph options."""
    from ..driver import build
    from ..runtime import to_device
    from ..runtime.feeds import random_inputs
    from .timing import time_interleaved

    untuned = build(graph, target, db=None, cache=cache, jobs=jobs, **options)
    tuned = build(graph, target, db=db, cache=cache, jobs=jobs, **options)
    dev = tuned.device
    feeds = {k: to_device(v, dev) for k, v in random_inputs(graph).items()}
    untuned_ms, tuned_ms = time_interleaved([lambda: untuned.run(as_numpy=False, **feeds),
                                             lambda: tuned.run(as_numpy=False, **feeds)],
                                            dev.sync, warmup=warmup, iters=runs)
    n_tuned = sum(k.config_source == "tuned" for k in tuned.kernels)
    return ModelTimes(untuned_ms, tuned_ms, runs, len(tuned.kernels), n_tuned)
