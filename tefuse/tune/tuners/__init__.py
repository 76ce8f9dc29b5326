"""Tuners: which config points to measure next. `make_tuner(name, space, seed)` picks one."""
from __future__ import annotations

from ...schedules.space import ConfigSpace
from .base import Tuner
from .grid import GridTuner
from .random import RandomTuner
from .xgb import XGBTuner

TUNERS = {"xgb": XGBTuner, "random": RandomTuner, "grid": GridTuner}


def make_tuner(name: str, space: ConfigSpace, seed: int = 0, **kwargs) -> Tuner:
    try:
        cls = TUNERS[name]
    except KeyError:
        raise ValueError(f"unknown tuner {name!r}; use one of {sorted(TUNERS)}") from None
    return cls(space, seed=seed, **kwargs)


__all__ = ["GridTuner", "RandomTuner", "TUNERS", "Tuner", "XGBTuner", "make_tuner"]
