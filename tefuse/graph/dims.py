"""Symbolic dimensions: named sizes with a `min:opt:max` range, bound from a run's inputs.

Why: one build should serve every batch size and sequence length in a range, as TensorRT's
optimization profiles do. A shape may hold a dim name (str) where a size is not fixed; this
module holds the ranges (`DimRange`), parses the CLI's `--dynamic N=1:8:64`, and binds the
names from the inputs' shapes once per run, checking that every input agrees on each name and
that each size lies in its range. Memory is planned for `DimRange.max`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence, Union

from ..errors import DynamicShapeError

Dim = Union[int, str]
"""One dimension of a shape: a fixed size, or the name of a symbolic size."""


@dataclass(frozen=True)
class DimRange:
    """The sizes one symbolic dim may take; `opt` is the size tuned for."""

    min: int
    opt: int
    max: int

    def __post_init__(self) -> None:
        if not 1 <= self.min <= self.opt <= self.max:
            raise DynamicShapeError(
                f"a dim range needs 1 <= min <= opt <= max, got {self.min}:{self.opt}:{self.max}")

    def __str__(self) -> str:
        return f"{self.min}:{self.opt}:{self.max}"


def parse_range(text: str) -> DimRange:
    """`"1:8:64"` (min:opt:max), `"1:64"` (opt = max) or `"8"` (fixed) -> DimRange."""
    try:
        parts = [int(p) for p in text.split(":")]
    except ValueError:
        raise DynamicShapeError(f"dim range {text!r} is not min:opt:max of integers") from None
    if len(parts) == 1:
        parts = parts * 3
    elif len(parts) == 2:
        parts = [parts[0], parts[1], parts[1]]
    elif len(parts) != 3:
        raise DynamicShapeError(f"dim range {text!r} is not min:opt:max of integers")
    return DimRange(*parts)


def parse_dynamic(specs: Sequence[str]) -> dict[str, DimRange]:
    """`["N=1:8:64", "S=1:128:512"]` -> {"N": DimRange(1, 8, 64), ...}; a name given twice
    is an error."""
    out: dict[str, DimRange] = {}
    for spec in specs:
        name, sep, rng = spec.partition("=")
        name = name.strip()
        if not sep or not name:
            raise DynamicShapeError(f"--dynamic {spec!r}: expected NAME=min:opt:max")
        if name in out:
            raise DynamicShapeError(f"--dynamic gives dim {name!r} twice")
        out[name] = parse_range(rng.strip())
    return out


def symbolic_names(shape: Sequence[Dim]) -> tuple[str, ...]:
    """The names of a shape's symbolic dims, in order."""
    return tuple(d for d in shape if isinstance(d, str))


def bind_dims(specs: Mapping[str, Sequence[Dim]], shapes: Mapping[str, Sequence[int]],
              ranges: Mapping[str, DimRange]) -> dict[str, int]:
    """Bind every dim name in `specs` (input name -> declared shape) from the given `shapes`
    (input name -> actual shape). Raises DynamicShapeError naming the input and axis when a rank
    or fixed size differs, when two inputs disagree on one name, or when a size is out of range."""
    bound: dict[str, int] = {}
    where: dict[str, str] = {}
    for inp, decl in specs.items():
        if inp not in shapes:
            raise DynamicShapeError(f"input {inp!r} not given")
        got = tuple(int(s) for s in shapes[inp])
        if len(got) != len(decl):
            raise DynamicShapeError(f"input {inp!r} has rank {len(got)}, the model's has {len(decl)}")
        for axis, (d, s) in enumerate(zip(decl, got)):
            if isinstance(d, str):
                if d in bound and bound[d] != s:
                    raise DynamicShapeError(
                        f"dim {d!r}: input {inp!r} axis {axis} is {s}, but {where[d]} is {bound[d]}")
                if d not in bound:
                    rng = ranges.get(d)
                    if rng is not None and not rng.min <= s <= rng.max:
                        raise DynamicShapeError(
                            f"dim {d!r}: input {inp!r} axis {axis} is {s}, outside its range {rng}")
                    bound[d] = s
                    where[d] = f"input {inp!r} axis {axis}"
            elif int(d) != s:
                raise DynamicShapeError(f"input {inp!r} axis {axis} is {s}, the model's is {d}")
    return bound


def max_shape(shape: Sequence[Dim], ranges: Mapping[str, DimRange]) -> tuple[int, ...]:
    """A shape with each symbolic dim at its range's max: the size buffers are planned for."""
    out = []
    for d in shape:
        if isinstance(d, str):
            if d not in ranges:
                raise DynamicShapeError(f"dim {d!r} has no range; give one with --dynamic {d}=min:opt:max")
            out.append(ranges[d].max)
        else:
            out.append(int(d))
    return tuple(out)
