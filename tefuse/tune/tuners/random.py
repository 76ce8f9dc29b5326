"""Random search without replacement: the baseline every model-based tuner must beat."""
from __future__ import annotations

from .base import Tuner


class RandomTuner(Tuner):
    name = "random"

    def _propose(self, n: int) -> list[int]:
        return self._random_unvisited(n)
