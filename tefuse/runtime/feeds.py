"""Seeded inputs for a graph: what `tefuse run` feeds where no file gives an input, and what the
tuner's before/after timing feeds."""
from __future__ import annotations

from typing import Any, Optional


def random_inputs(graph, seed: int = 0, given: Optional[dict[str, Any]] = None,
                  sizes: Optional[dict[str, int]] = None) -> dict[str, Any]:
    """Values for every graph input: the given ones, seeded random for the rest (uniform [0, 1)
    floats, random booleans, integers in [0, 4): valid indices for small tables). sizes: each
    symbolic dim's size (a graph built over dim ranges)."""
    import numpy as np

    from ..graph.dims import concrete_shape
    from ..graph.lowbit import logical_dtype

    rng = np.random.default_rng(seed)
    feeds = dict(given or {})
    for i in graph.inputs:
        if i.name in feeds:
            continue
        dtype = logical_dtype(i)  # float8, int4...: as ml_dtypes arrays, as run() takes them
        shape = concrete_shape(i.shape, sizes or {})
        if dtype.startswith("float"):
            feeds[i.name] = rng.random(shape, dtype=np.float32).astype(dtype)
        elif dtype == "bool":
            feeds[i.name] = rng.random(shape) > 0.5
        else:
            feeds[i.name] = rng.integers(0, 4, size=shape).astype(dtype)
    return feeds
