"""Model-based tuner: an xgboost cost model steers simulated annealing over the space.

The AutoTVM recipe, on our knob features: fit the model on every measured point (and on
records of other workloads of the same template: transfer learning), anneal many chains
over config points scoring them with the model, measure the best unvisited points, with a
fraction epsilon of each batch random so the model keeps seeing the unexpected. The target
is throughput relative to the best of the same workload (best/cost, failures 0), which
makes workloads of different sizes comparable; `loss="rank"` fits a pairwise ranking per
workload instead.
"""
from __future__ import annotations

import logging
import math
from collections import defaultdict
from typing import Sequence

import numpy as np

from ..features import Featurizer
from ...schedules.space import ConfigSpace
from .base import Tuner

# One thread: the model is small (a few thousand rows), and the tuner's process shares the CPUs
# with its build workers. With two OpenMP threads, each of annealing's many small predictions
# waits at a barrier for whichever thread the busy cores have descheduled: a seeded xgb search
# took 8.7 s beside two busy processes on two cores, 3.3 s with one thread (1.4 s alone).
XGB_THREADS = 1

log = logging.getLogger(__name__)


class XGBTuner(Tuner):
    name = "xgb"

    def __init__(self, space: ConfigSpace, seed: int = 0, *, loss: str = "reg", epsilon: float = 0.1,
                 min_train: int = 8, sa_chains: int = 128, sa_steps: int = 80, num_rounds: int = 80,
                 transfer_weight: float = 0.5) -> None:
        super().__init__(space, seed)
        if loss not in ("reg", "rank"):
            raise ValueError("loss must be 'reg' or 'rank'")
        self.loss = loss
        self.epsilon = epsilon
        self.min_train = min_train
        self.sa_chains = sa_chains
        self.sa_steps = sa_steps
        self.num_rounds = num_rounds
        self.transfer_weight = transfer_weight
        self.feat = Featurizer(space)
        self.dims = np.asarray(space.dims(), dtype=np.int64)
        self.radix = np.concatenate([[1], np.cumprod(self.dims)[:-1]]).astype(np.int64)
        self.model = None
        self._fitted_on = -1
        self._transfer: list[tuple[np.ndarray, np.ndarray, int]] = []  # (X, y, group)

    # -- data -----------------------------------------------------------------------------
    def load_transfer(self, samples: Sequence[tuple[dict, float, str]]) -> None:
        by_wl: dict[str, list[tuple[np.ndarray, float]]] = defaultdict(list)
        for values, cost, wl in samples:
            f = self.feat.values(values)
            if f is not None:
                by_wl[wl].append((f, cost))
        for g, (wl, rows) in enumerate(sorted(by_wl.items()), start=1):
            finite = [c for _, c in rows if c is not None and math.isfinite(c) and c > 0]
            if len(finite) < 2:
                continue
            best = min(finite)
            X = np.stack([f for f, _ in rows])
            y = np.asarray([best / c if c is not None and math.isfinite(c) and c > 0 else 0.0
                            for _, c in rows], np.float32)
            self._transfer.append((X, y, g))
        if self._transfer:
            log.info("xgb tuner: %d transfer sample(s) from %d other workload(s)",
                     sum(len(y) for _, y, _ in self._transfer), len(self._transfer))

    def _own_data(self) -> tuple[np.ndarray, np.ndarray]:
        idx = sorted(self.costs)
        costs = np.asarray([self.costs[i] for i in idx], np.float64)
        finite = np.isfinite(costs)
        best = costs[finite].min() if finite.any() else 1.0
        y = np.where(finite, best / np.where(finite, costs, 1.0), 0.0).astype(np.float32)
        return self.feat.indices(idx), y

    # -- model ----------------------------------------------------------------------------
    def _fit(self) -> bool:
        import xgboost as xgb

        n_own = sum(1 for c in self.costs.values() if math.isfinite(c))
        if n_own < 2 and not self._transfer:
            return False
        if len(self.costs) < self.min_train and not self._transfer:
            return False
        if self._fitted_on == len(self.costs) and self.model is not None:
            return True
        X, y = self._own_data()
        parts = [(X, y, np.ones(len(y), np.float32), np.zeros(len(y), np.int64))]
        for Xt, yt, g in self._transfer:
            parts.append((Xt, yt, np.full(len(yt), self.transfer_weight, np.float32), np.full(len(yt), g)))
        Xa = np.vstack([p[0] for p in parts])
        ya = np.concatenate([p[1] for p in parts])
        wa = np.concatenate([p[2] for p in parts])
        qa = np.concatenate([p[3] for p in parts])
        order = np.argsort(qa, kind="stable")
        params = {"max_depth": 6, "eta": 0.2, "min_child_weight": 1, "subsample": 1.0,
                  "lambda": 1.0, "seed": self.seed, "nthread": XGB_THREADS, "verbosity": 0,
                  "objective": "rank:pairwise" if self.loss == "rank" else "reg:squarederror"}
        if self.loss == "rank":
            # ranking weights are per query group; plain per-row weights are refused
            dtrain = xgb.DMatrix(Xa[order], label=ya[order], qid=qa[order], nthread=XGB_THREADS)
        else:
            dtrain = xgb.DMatrix(Xa[order], label=ya[order], weight=wa[order], nthread=XGB_THREADS)
        self.model = xgb.train(params, dtrain, num_boost_round=self.num_rounds)
        self._fitted_on = len(self.costs)
        return True

    def predict_points(self, points: np.ndarray) -> np.ndarray:
        """Model score of config points (higher = faster)."""
        return self.model.inplace_predict(self.feat.points(points))

    # -- search ---------------------------------------------------------------------------
    def _propose(self, n: int) -> list[int]:
        if n <= 0:
            return []
        if not self._fit():
            return self._random_unvisited(n)
        n_explore = int(round(self.epsilon * n))
        if n_explore == 0 and n > 1 and self.rng.random() < self.epsilon * n:
            n_explore = 1
        picked = self._anneal(n - n_explore)
        picked += self._random_unvisited(n - len(picked), exclude=picked)
        return picked

    def _indices(self, points: np.ndarray) -> np.ndarray:
        return points @ self.radix

    def _start_points(self) -> np.ndarray:
        k = self.sa_chains
        good = sorted((c, i) for i, c in self.costs.items() if math.isfinite(c))[: k // 4]
        pts = [self.space.point(i) for _, i in good]
        rand = self.rng.integers(0, self.dims, size=(k - len(pts), len(self.dims)))
        return np.vstack([np.asarray(pts, np.int64).reshape(-1, len(self.dims)), rand])

    def _anneal(self, k: int) -> list[int]:
        """Simulated annealing on the model's score; returns the k best unvisited points seen."""
        if k <= 0:
            return []
        mutable = np.flatnonzero(self.dims > 1)
        if len(mutable) == 0:
            return []
        cur = self._start_points()
        cur_s = self.predict_points(cur)
        seen: dict[int, float] = {}

        def note(points: np.ndarray, scores: np.ndarray) -> None:
            for i, s in zip(self._indices(points).tolist(), scores.tolist()):
                if i not in self.visited:
                    seen[i] = s

        note(cur, cur_s)
        scale = float(np.std(cur_s)) or 1e-3
        for step in range(self.sa_steps):
            temp = scale * (1.0 - step / self.sa_steps)
            new = cur.copy()
            rows = np.arange(len(new))
            knob = mutable[self.rng.integers(0, len(mutable), size=len(new))]
            # half the moves go to a neighbouring candidate (factors are sorted), half anywhere
            jump = self.rng.integers(0, self.dims[knob])
            near = np.clip(new[rows, knob] + self.rng.choice([-1, 1], size=len(new)), 0, self.dims[knob] - 1)
            new[rows, knob] = np.where(self.rng.random(len(new)) < 0.5, near, jump)
            s = self.predict_points(new)
            accept = (s >= cur_s) | (self.rng.random(len(new)) < np.exp(np.minimum(s - cur_s, 0.0) / max(temp, 1e-9)))
            cur[accept], cur_s[accept] = new[accept], s[accept]
            note(new, s)
        ranked = sorted(seen.items(), key=lambda kv: (-kv[1], kv[0]))
        return [i for i, _ in ranked[:k]]

    def best_predicted(self, n: int = 1) -> list[int]:
        """Indices the model likes best among those seen (for inspection)."""
        return self._anneal(n) if self._fit() else []

