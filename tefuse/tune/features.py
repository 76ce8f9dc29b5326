"""Features of config points for the cost model, computed from knob values alone.

Why not features of the scheduled TIR for every point: applying a template costs
milliseconds, and simulated annealing scores thousands of points per batch. Instead the
loop-nest quantities that matter are derived from the split knobs, which *are* the loop
nest: for templates whose split knobs share a part count (conv2d_direct's
block/vthread/thread/inner), the log2 of the product of each part over all knobs is the
thread count, virtual threads, per-thread work and grid size. Values, not positions, are
used, so records of other workloads of the same template (transfer learning) land in the
same feature space.
"""
from __future__ import annotations

import math
import re
import zlib
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

from ..schedules.common import launch_extents
from ..schedules.space import ConfigSpace


def _log2(v: float) -> float:
    return math.log2(1.0 + abs(float(v))) * (1.0 if v >= 0 else -1.0)


def value_features(value: Any) -> list[float]:
    """Features of one knob value: log2 of each split factor, else a scaled scalar (a string:
    a fixed code of it)."""
    if isinstance(value, (tuple, list)):
        return [math.log2(max(int(x), 1)) for x in value]
    if isinstance(value, bool):
        return [float(value)]
    if isinstance(value, (int, float)):
        return [_log2(value)]
    # a stable hash: str's hash() changes from process to process, and a model trained in one
    # (the transfer model's disk cache) scores configs in another
    return [float(zlib.crc32(str(value).encode()) % 97) / 97.0]


@dataclass
class Featurizer:
    """Vectorised knob features for one space: per-knob tables indexed by candidate position."""

    space: ConfigSpace

    def __post_init__(self) -> None:
        self.tables: list[np.ndarray] = []
        self.split_groups: dict[int, list[int]] = {}
        for k, knob in enumerate(self.space.knobs):
            rows = [value_features(c) for c in knob.candidates]
            width = max(len(r) for r in rows)
            rows = [r + [0.0] * (width - len(r)) for r in rows]
            self.tables.append(np.asarray(rows, dtype=np.float32))
            if knob.candidates and isinstance(knob.candidates[0], tuple):
                self.split_groups.setdefault(len(knob.candidates[0]), []).append(k)
        self.names = [f"{kn.name}[{j}]" for kn, t in zip(self.space.knobs, self.tables)
                      for j in range(t.shape[1])]
        for parts, ks in sorted(self.split_groups.items()):
            if len(ks) > 1:
                self.names += [f"prod{parts}[{j}]" for j in range(parts)]

    @property
    def width(self) -> int:
        return len(self.names)

    def points(self, points: np.ndarray) -> np.ndarray:
        """(n, n_knobs) candidate positions -> (n, width) features."""
        points = np.asarray(points, dtype=np.int64).reshape(-1, len(self.tables))
        cols = [t[points[:, k]] for k, t in enumerate(self.tables)]
        for parts, ks in sorted(self.split_groups.items()):
            if len(ks) > 1:
                cols.append(sum(cols[k] for k in ks))
        return np.hstack(cols) if cols else np.zeros((len(points), 0), np.float32)

    def indices(self, indices: Sequence[int]) -> np.ndarray:
        return self.points(np.asarray([self.space.point(int(i)) for i in indices]).reshape(-1, len(self.tables)))

    def values(self, values: dict) -> Optional[np.ndarray]:
        """Features of a config given by values (another workload's record); None if it does
        not fit this space's knobs (other names or split shapes). A knob added after the record
        (`implied_first`) takes its first candidate, as in ConfigSpace.find."""
        values = self.space.completed(values)
        cols = []
        for knob, table in zip(self.space.knobs, self.tables):
            if knob.name not in values:
                return None
            f = value_features(tuple(values[knob.name]) if isinstance(values[knob.name], list)
                               else values[knob.name])
            if len(f) != table.shape[1]:
                return None
            cols.append(np.asarray(f, np.float32)[None, :])
        for parts, ks in sorted(self.split_groups.items()):
            if len(ks) > 1:
                cols.append(sum(cols[k] for k in ks))
        return np.hstack(cols)[0] if cols else np.zeros(0, np.float32)


_UNROLL = re.compile(r'"pragma_auto_unroll_max_step":\s*(\d+)')


def tir_features(mod) -> dict[str, float]:
    """Loop-nest facts of a scheduled module: threads per block (product over threadIdx
    tags of the largest extent bound to each), grid size, virtual threads, max unroll step.
    Cheap enough per built candidate, too slow for every annealing point; the derived knob
    features stand in there. (TVM 0.27 has no Python TIR visitor: the printed TVMScript is read.)"""
    text = mod.script()
    ext = launch_extents(text)
    unroll = max([float(u) for u in _UNROLL.findall(text)] or [0.0])

    def prod(prefix: str) -> float:
        return float(np.prod([v for k, v in ext.items() if k.startswith(prefix)] or [1.0]))

    return {"threads": prod("threadIdx"), "blocks": prod("blockIdx"), "vthreads": prod("vthread"),
            "unroll": unroll}


#: dims of the anchor shape a workload's features hold (right-aligned: the channels/N last)
SHAPE_SLOTS = 4
WORKLOAD_FEATURES = ([f"shape[{j}]" for j in range(SHAPE_SLOTS)]
                     + ["numel", "dtype_bits", "ops"])


def workload_features(workload: str) -> list[float]:
    """Features of a workload from its key alone (`ops|shape|dtype|digest`, fusion/workload.py):
    log2 of the anchor's dims, of its size, the dtype's width and the op count. A record holds
    only the key, so a model trained on records can know no more of a workload than this; it
    is what makes other workloads' timings say something about an unseen one."""
    parts = workload.split("|")
    ops = parts[0].split("+") if parts and parts[0] else []
    dims = []
    if len(parts) > 1:
        for d in parts[1].split("x"):
            try:
                dims.append(max(int(d), 1))
            except ValueError:
                pass
    dims = ([1] * SHAPE_SLOTS + dims)[-SHAPE_SLOTS:] if len(dims) <= SHAPE_SLOTS else \
        [math.prod(dims[:len(dims) - SHAPE_SLOTS + 1])] + dims[len(dims) - SHAPE_SLOTS + 1:]
    width = re.search(r"(\d+)$", parts[2]) if len(parts) > 2 else None
    numel = math.prod(dims)
    return [math.log2(d) for d in dims] + [math.log2(numel), float(width.group(1)) if width else 32.0,
                                           float(len(ops))]


@dataclass(frozen=True)
class KnobSchema:
    """The knob feature layout of one template, taken from config values alone (no space):
    the same features as Featurizer (`value_features` per knob, and the per-part products of
    split knobs of one part count), so a model of records of many workloads can score any
    workload's configs, even one whose space cannot be rebuilt (a record's workload)."""

    knobs: tuple[tuple[str, int], ...]  # (name, width), sorted by name

    @classmethod
    def of(cls, configs: Sequence[dict]) -> "KnobSchema":
        """The layout of these configs' knobs: every name seen, each at its widest value."""
        widths: dict[str, int] = {}
        for values in configs:
            for name, v in values.items():
                widths[name] = max(widths.get(name, 0), len(value_features(v)))
        return cls(tuple(sorted(widths.items())))

    @property
    def split_groups(self) -> dict[int, list[int]]:
        groups: dict[int, list[int]] = {}
        for k, (_, width) in enumerate(self.knobs):
            if width > 1:
                groups.setdefault(width, []).append(k)
        return {w: ks for w, ks in sorted(groups.items()) if len(ks) > 1}

    @property
    def names(self) -> list[str]:
        out = [f"{name}[{j}]" for name, width in self.knobs for j in range(width)]
        return out + [f"prod{w}[{j}]" for w in self.split_groups for j in range(w)]

    def features(self, values: dict) -> np.ndarray:
        """One config's features; a knob it lacks (a record older than the knob) reads as zeros."""
        cols = []
        for name, width in self.knobs:
            f = value_features(tuple(values[name]) if isinstance(values.get(name), list)
                               else values[name]) if name in values else []
            cols.append((f + [0.0] * width)[:width])
        for width, ks in self.split_groups.items():
            cols.append([sum(cols[k][j] for k in ks) for j in range(width)])
        return np.asarray([x for c in cols for x in c], np.float32)
