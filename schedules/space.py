"""Deterministic knob spaces: index <-> config, the same on every machine and run.

A space is an ordered list of knobs, each with an ordered list of candidates; an index is
the mixed-radix number of the chosen candidates (first knob fastest), so the index of a
config is stable as long as the template and workload are. Rules (`constrain`) mark the
combinations a template cannot apply; they leave the indices alone.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional, Sequence


def factorizations(extent: int, parts: int, max_inner: Optional[int] = None) -> list[tuple[int, ...]]:
    """All ordered tuples of `parts` positive ints whose product is `extent` (perfect tiling)."""
    if parts == 1:
        return [(extent,)]
    out = []
    for d in divisors(extent):
        for rest in factorizations(extent // d, parts - 1, max_inner):
            cand = (d,) + rest
            if max_inner is None or cand[-1] <= max_inner:
                out.append(cand)
    return out


def _hashable(v: Any) -> Any:
    """A knob value as the space holds it (JSON gives lists where candidates are tuples)."""
    return tuple(v) if isinstance(v, list) else v


def divisors(n: int) -> list[int]:
    small = [d for d in range(1, int(math.isqrt(n)) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


class KnobError(ValueError):
    """A knob or knob value that a space does not have (a search narrowed to it cannot run)."""


@dataclass
class Knob:
    name: str
    candidates: list[Any]
    # added after records were written: a record without it means its first candidate, the value
    # that keeps the template's kernels as they were (ConfigSpace.find)
    implied_first: bool = False


@dataclass
class Config:
    """One point of a space; `values` maps knob name -> chosen candidate."""

    index: int
    values: dict[str, Any]

    def __getitem__(self, k: str) -> Any:
        return self.values[k]

    def to_json(self) -> dict:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.values.items()}


@dataclass
class ConfigSpace:
    knobs: list[Knob] = field(default_factory=list)
    # rules a config's values must meet to be worth building: the product of the knobs holds
    # combinations a template refuses (Hopper's wgmma with a tile depth other than one 128-byte
    # row); tuners skip them instead of spending trials on them. Indices do not change.
    rules: list[Callable[[dict], bool]] = field(default_factory=list)

    def define_split(self, name: str, extent: int, parts: int, *,
                     filter=None, max_inner: Optional[int] = None) -> None:
        cands = factorizations(int(extent), parts, max_inner)
        if filter is not None:
            cands = [c for c in cands if filter(c)] or cands[:1]
        self.knobs.append(Knob(name, cands))

    def define_knob(self, name: str, candidates: Sequence[Any], *, implied_first: bool = False) -> None:
        """implied_first: a knob added to a template whose records predate it; the first
        candidate must be the template's behaviour before it, which those records then mean."""
        self.knobs.append(Knob(name, list(candidates), implied_first))

    def constrain(self, rule: Callable[[dict], bool]) -> None:
        """Add a rule over a config's values (True: the template can apply it)."""
        self.rules.append(rule)

    def restricted(self, only: dict[str, Any]) -> "ConfigSpace":
        """The same space (same indices) admitting only configs with these knob values: a search
        narrowed by hand (`tefuse tune --only intrin=wgmma`)."""
        knobs = {kn.name: kn.candidates for kn in self.knobs}
        want = {k: _hashable(v) for k, v in only.items()}
        for k, v in want.items():
            if k not in knobs:
                raise KnobError(f"the space has no knob {k!r} (it has {', '.join(knobs)})")
            if v not in knobs[k] or (isinstance(v, bool) and not any(isinstance(c, bool) for c in knobs[k])):
                raise KnobError(f"{k}={only[k]!r} is not one of the knob's candidates {knobs[k]}")
        return ConfigSpace(self.knobs, self.rules + [lambda v: all(_hashable(v[k]) == x for k, x in want.items())])

    def admits(self, index: int) -> bool:
        """Whether the config at `index` meets every rule."""
        if not self.rules:
            return True
        values = self.get(index).values
        return all(rule(values) for rule in self.rules)

    def __len__(self) -> int:
        return math.prod(len(k.candidates) for k in self.knobs)

    def get(self, index: int) -> Config:
        if not 0 <= index < len(self):
            raise IndexError(f"config index {index} outside space of {len(self)}")
        vals, rest = {}, index
        for k in self.knobs:
            rest, pos = divmod(rest, len(k.candidates))
            vals[k.name] = k.candidates[pos]
        return Config(index, vals)

    def index_of(self, values: dict[str, Any]) -> int:
        index, radix = 0, 1
        for k in self.knobs:
            v = values[k.name]
            v = _hashable(v)
            index += k.candidates.index(v) * radix
            radix *= len(k.candidates)
        return index

    def from_values(self, values: dict[str, Any]) -> Config:
        """The config of these knob values (an `implied_first` knob left out: its first candidate)."""
        return self.get(self.index_of(self.completed(values)))

    def completed(self, values: dict[str, Any]) -> dict[str, Any]:
        """A record's values with each `implied_first` knob it lacks at its first candidate (what
        a record written before that knob means)."""
        return {**{k.name: k.candidates[0] for k in self.knobs if k.implied_first}, **values}

    def find(self, values: dict[str, Any]) -> Optional[int]:
        """Where a config given by its values (a tuning record's) sits in this space, or None
        where they no longer fit it (a knob it lacks, a value the space no longer offers). A knob
        defined `implied_first` that the record lacks takes its first candidate (`completed`)."""
        try:
            return self.get(self.index_of(self.completed(values))).index
        except (KeyError, ValueError, TypeError, IndexError):
            return None

    def __iter__(self) -> Iterator[Config]:
        return (self.get(i) for i in range(len(self)))

    def point(self, index: int) -> list[int]:
        """Per-knob candidate positions (the tuner's coordinates)."""
        out, rest = [], index
        for k in self.knobs:
            rest, pos = divmod(rest, len(k.candidates))
            out.append(pos)
        return out

    def index_of_point(self, point: Sequence[int]) -> int:
        index, radix = 0, 1
        for k, p in zip(self.knobs, point):
            index += p * radix
            radix *= len(k.candidates)
        return index

    def dims(self) -> list[int]:
        return [len(k.candidates) for k in self.knobs]
