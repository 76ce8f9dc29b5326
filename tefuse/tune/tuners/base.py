"""The tuner interface: propose unmeasured config indices, learn from measured costs.

Costs are seconds; a failed measurement (compile error, wrong result, ...) is reported as
`math.inf`, so it is visited (never proposed again) but can never be the best.
"""
from __future__ import annotations

import math
from typing import Iterable, Optional, Sequence

import numpy as np

from ...schedules.space import ConfigSpace


class Tuner:
    name = "base"

    def __init__(self, space: ConfigSpace, seed: int = 0) -> None:
        self.space = space
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.visited: set[int] = set()
        self.costs: dict[int, float] = {}
        self.best_index: Optional[int] = None
        self.best_cost = math.inf
        self.trials_since_best = 0

    # -- proposing ------------------------------------------------------------------------
    def has_next(self) -> bool:
        return len(self.visited) < len(self.space)

    def next_batch(self, n: int) -> list[int]:
        """Up to n unique, unvisited indices the space admits; they count as visited from now on.
        Proposals the space's rules refuse count as visited too, unmeasured: no trial is spent on
        a config the template would refuse to apply."""
        out: list[int] = []
        while len(out) < n and self.has_next():
            got = self._propose(min(n - len(out), len(self.space) - len(self.visited)))
            assert len(set(got)) == len(got) and not self.visited.intersection(got)
            if not got:
                break
            self.visited.update(got)
            out += [i for i in got if self.space.admits(i)]
        return out

    def _propose(self, n: int) -> list[int]:
        raise NotImplementedError

    def _random_unvisited(self, n: int, exclude: Iterable[int] = ()) -> list[int]:
        """Sampling without replacement: rejection while the space is mostly unvisited,
        else a permutation of what is left."""
        taken = self.visited.union(exclude)
        left = len(self.space) - len(taken)
        n = min(n, left)
        out: list[int] = []
        if len(self.space) > 4 * len(taken) + 4 * n:
            chosen = set()
            while len(out) < n:
                i = int(self.rng.integers(len(self.space)))
                if i not in taken and i not in chosen:
                    chosen.add(i)
                    out.append(i)
            return out
        rest = np.array([i for i in range(len(self.space)) if i not in taken], dtype=np.int64)
        return [int(i) for i in self.rng.permutation(rest)[:n]]

    # -- learning -------------------------------------------------------------------------
    def update(self, indices: Sequence[int], costs: Sequence[float]) -> None:
        """Results of measured indices (math.inf for failures)."""
        for i, c in zip(indices, costs):
            i = int(i)
            c = float(c) if c is not None and math.isfinite(c) and c > 0 else math.inf
            self.visited.add(i)
            self.costs[i] = c
            if c < self.best_cost:
                self.best_cost, self.best_index = c, i
                self.trials_since_best = 0
            else:
                self.trials_since_best += 1

    def load_history(self, indices: Sequence[int], costs: Sequence[float]) -> None:
        """Results from the log of earlier runs (resume): visited, and learned from."""
        self.update(indices, costs)
        self.trials_since_best = 0

    def load_transfer(self, samples: Sequence[tuple[dict, float, str]]) -> None:
        """(config values, cost, workload) of other workloads of the same template. Only
        model-based tuners use them."""
