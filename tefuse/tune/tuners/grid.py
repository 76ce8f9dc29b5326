"""Grid search: indices in order. Only sensible for small spaces (CPU templates, injective)."""
from __future__ import annotations

from .base import Tuner


class GridTuner(Tuner):
    name = "grid"

    def __init__(self, space, seed: int = 0) -> None:
        super().__init__(space, seed)
        self._cursor = 0

    def _propose(self, n: int) -> list[int]:
        out: list[int] = []
        while len(out) < n and self._cursor < len(self.space):
            if self._cursor not in self.visited:
                out.append(self._cursor)
            self._cursor += 1
        return out
