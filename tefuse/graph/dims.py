"""Symbolic dimensions: named sizes with a `min:opt:max` range, bound from a run's inputs.

Why: one build should serve every batch size and sequence length in a range, as TensorRT's
optimization profiles do. A shape may hold a dim name (str) where a size is not fixed; this
module holds the ranges (`DimRange`), parses the CLI's `--dynamic N=1:8:64`, and binds the
names from the inputs' shapes once per run, checking that every input agrees on each name and
that each size lies in its range. Memory is planned for `DimRange.max`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence, TypeVar, Union

from tvm.ir.expr import Expr as PrimExpr
from tvm import tirx as tir

from tvm_ffi import structural_walk

from ..errors import DynamicShapeError, OpError
from ..ops.value import eval_dim as value_eval_dim

_T = TypeVar("_T")

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


def parse_named(specs: Sequence[str], flag: str, form: str, parse: Callable[[str, str], _T]) -> dict[str, _T]:
    """`NAME=value` command-line specs (`flag`'s, each of the form `form`) -> {NAME: parse(NAME,
    value)}; a name given twice is an error."""
    out: dict[str, _T] = {}
    for spec in specs:
        name, sep, value = spec.partition("=")
        name = name.strip()
        if not sep or not name:
            raise DynamicShapeError(f"{flag} {spec!r}: expected {form}")
        if name in out:
            raise DynamicShapeError(f"{flag} gives dim {name!r} twice")
        out[name] = parse(name, value.strip())
    return out


def parse_dynamic(specs: Sequence[str]) -> dict[str, DimRange]:
    """`["N=1:8:64", "S=1:128:512"]` -> {"N": DimRange(1, 8, 64), ...}."""
    return parse_named(specs, "--dynamic", "NAME=min:opt:max", lambda _, rng: parse_range(rng))


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


# -- symbolic dims inside a graph -------------------------------------------------------------
# A graph input's symbolic dim is an int64 TE variable named after the dim; a node's shape may
# hold expressions of them (a Reshape of [N, S, H] to [N*S, H]). Shapes that hold no variable
# are plain ints, as before.

def symbolic_dim(name: str) -> tir.Var:
    """The int64 variable a symbolic dim `name` is in TE shapes (one per name and graph)."""
    return tir.Var(name, "int64")


def is_symbolic(d) -> bool:
    return isinstance(d, PrimExpr) and not isinstance(d, tir.IntImm)


def is_static(shape: Sequence) -> bool:
    """Whether every dim of the shape is a fixed size."""
    return not any(is_symbolic(d) for d in shape)


def shape_str(shape: Sequence) -> str:
    """`1,3,224,224` or `N,3,224,224` (an expression as TVM prints it)."""
    return ",".join(str(d) for d in shape)


def declared_shape(shape: Sequence) -> tuple[Dim, ...]:
    """A graph input's shape as `bind_dims` takes it: a dim variable as its name."""
    out: list[Dim] = []
    for d in shape:
        if isinstance(d, tir.Var):
            out.append(d.name)
        elif is_symbolic(d):
            raise DynamicShapeError(f"an input dim must be a size or a name, got {d}")
        else:
            out.append(int(d))
    return tuple(out)


def dim_vars(shapes: Sequence[Sequence]) -> dict[str, tir.Var]:
    """{name: variable} of every dim variable the shapes hold."""
    found: dict[str, tir.Var] = {}

    def visit(v: tir.Var) -> None:
        found.setdefault(v.name, v)

    for shape in shapes:
        for d in shape:
            if is_symbolic(d):
                structural_walk(d, (tir.Var, visit), order="post")
    return found


_OPS = {"add": (tir.Add, lambda a, b: a + b), "sub": (tir.Sub, lambda a, b: a - b),
        "mul": (tir.Mul, lambda a, b: a * b), "floordiv": (tir.FloorDiv, lambda a, b: a // b),
        "floormod": (tir.FloorMod, lambda a, b: a % b), "min": (tir.Min, min), "max": (tir.Max, max)}


def eval_dim(d, bound: Mapping[str, int]) -> int:
    """A dim's size with each dim name bound (an int stays itself)."""
    try:
        return value_eval_dim(d, bound)
    except OpError as e:
        raise DynamicShapeError(str(e)) from None


def concrete_shape(shape: Sequence, bound: Mapping[str, int]) -> tuple[int, ...]:
    """A shape's sizes with the dim names bound."""
    return tuple(eval_dim(d, bound) for d in shape)


def ranges_max(ranges: Mapping[str, DimRange]) -> dict[str, int]:
    """Each dim at its range's max: the binding buffers are planned for."""
    return {k: r.max for k, r in ranges.items()}


def dim_to_json(d) -> Union[int, str, list]:
    """A dim for a saved plan: an int, a name, or [op, a, b] for an expression."""
    if not is_symbolic(d):
        return int(d)
    if isinstance(d, tir.Var):
        return d.name
    if isinstance(d, tir.Cast):
        return dim_to_json(d.value)
    for op, (kind, _) in _OPS.items():
        if isinstance(d, kind):
            return [op, dim_to_json(d.a), dim_to_json(d.b)]
    raise DynamicShapeError(f"dim expression {d} cannot be saved")


def dim_from_json(v, variables: dict[str, tir.Var]):
    """dim_to_json's inverse; names map to `variables` (made on first use, so shared)."""
    if isinstance(v, int):
        return v
    if isinstance(v, str):
        if v not in variables:
            variables[v] = symbolic_dim(v)
        return variables[v]
    op, a, b = v
    if op not in _OPS:
        raise DynamicShapeError(f"unknown dim operation {op!r}")
    x, y = dim_from_json(a, variables), dim_from_json(b, variables)
    x = x if not isinstance(x, int) else tir.IntImm("int64", x)
    y = y if not isinstance(y, int) else tir.IntImm("int64", y)
    return {"add": tir.Add, "sub": tir.Sub, "mul": tir.Mul, "floordiv": tir.FloorDiv, "floormod": tir.FloorMod,
            "min": tir.Min, "max": tir.Max}[op](x, y)
