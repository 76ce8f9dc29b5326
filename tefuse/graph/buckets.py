"""Size buckets of symbolic dims: which compiled variant of a kernel serves a run's sizes.

Why: a tensor-core GEMM over a dim range takes the tiles chosen for one size and pads every run's
rows to them; at a size far below it most of each tile is padding and the grid leaves SMs idle
(ResNet-50 built over N=1:32:64 ran batch 1 at twice the exact batch-1 build's time). As
TensorRT's profiles and MIOpen's dynamic kernels do, a range is cut into a few buckets, and a
kernel whose template sizes its tiles from the sizes (`Template.size_buckets`) is compiled once a
bucket, scheduled for the bucket's representative size; every other kernel is compiled once.

A bucket is given by its upper end: `ends` (4, 32, 64) over 1:32:64 are the buckets 1-4, 5-32 and
33-64; the default (4, 64), 1-4 and 5-64. Its representative size (what `ops.value.dim_hints`
says while its variant is scheduled) is the range's opt where the bucket holds it; below opt, its
smallest size; above opt, its largest. A bucket below opt is one whose grids are small, and
tiles sized for its largest size leave SMs idle at its smallest: ResNet-50's late 3x3 convs,
split-K'd for batch 4 of the bucket 1-4, ran 64 CTAs of 64x128 at batch 1, where the exact batch-1
build runs 128 of 64x64 (a size above its smallest takes more, smaller tiles). Above opt the grid
is full at every size, and tiles sized for the largest fill it.

Default ends: opt/8 (when at least min) and max, with opt between them only where max is more
than LARGE_FACTOR times opt; so two or three buckets a dim, the one holding opt scheduled exactly
as a build without buckets. A size above opt gets a variant of its own only that far out: opt's
tiles, sized to fill the GPU at opt, fill it at twice or three times opt as well (a bucket for
33-64 over 1:32:64 was 12 of ResNet-50's 29 variants), while at 8x opt they are smaller than that
grid wants. A graph's buckets are the product of its dims' (a `BucketPlan`); a kernel varies over
the dims its shapes hold.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence, Union

from ..errors import DynamicShapeError
from .dims import DimRange, parse_named

SMALL_FRACTION = 8  # the default first bucket ends at opt / SMALL_FRACTION
LARGE_FACTOR = 4  # sizes above opt get their own bucket only where max > LARGE_FACTOR * opt


def default_ends(r: DimRange) -> tuple[int, ...]:
    """The default buckets' upper ends: opt // 8 where it is at least min and below opt; opt
    where max is more than LARGE_FACTOR times it; max."""
    small = r.opt // SMALL_FRACTION
    ends = {r.max}
    if r.max > LARGE_FACTOR * r.opt:
        ends.add(r.opt)
    if r.min <= small < r.opt:
        ends.add(small)
    return tuple(sorted(ends))


@dataclass(frozen=True)
class Bucket:
    """Sizes lo..hi of one dim; `size`: the one its variants are scheduled for (the module
    docstring: opt where it holds it, else lo below opt and hi above)."""

    lo: int
    hi: int
    size: int

    def __str__(self) -> str:
        return str(self.lo) if self.lo == self.hi else f"{self.lo}-{self.hi}"


def dim_buckets(name: str, r: DimRange, ends: Optional[Sequence[int]] = None) -> tuple[Bucket, ...]:
    """The buckets of one dim from their upper ends (default_ends when None); the range's max ends
    the last whether given or not. An end outside the range is one DynamicShapeError line."""
    ends = default_ends(r) if ends is None else tuple(sorted({int(e) for e in ends} | {r.max}))
    bad = [e for e in ends if not r.min <= e <= r.max]
    if bad:
        raise DynamicShapeError(f"buckets of dim {name!r}: end {bad[0]} lies outside its range {r}")
    out, lo = [], r.min
    for hi in ends:
        out.append(Bucket(lo, hi, r.opt if lo <= r.opt <= hi else lo if hi < r.opt else hi))
        lo = hi + 1
    return tuple(out)


BucketKey = tuple  # one bucket index per dim of a BucketPlan, in its dims' order


@dataclass(frozen=True)
class BucketPlan:
    """Every symbolic dim's buckets; a key is a bucket index per dim (in `dims` order)."""

    dims: tuple[str, ...]
    buckets: tuple[tuple[Bucket, ...], ...]
    opts: tuple[int, ...]  # each range's opt

    @property
    def keys(self) -> list[BucketKey]:
        return list(itertools.product(*(range(len(b)) for b in self.buckets)))

    @property
    def opt_key(self) -> BucketKey:
        """The buckets that hold each range's opt: their variant is the build's kernel itself."""
        return tuple(next(i for i, b in enumerate(bs) if b.lo <= o <= b.hi) for o, bs in zip(self.opts, self.buckets))

    @property
    def size(self) -> int:
        """How many bucket keys there are (1: a build without variants)."""
        n = 1
        for b in self.buckets:
            n *= len(b)
        return n

    def key_of(self, sizes: Mapping[str, int]) -> BucketKey:
        """The key of the buckets holding `sizes` (a run's binding, already checked in range)."""
        return tuple(next(i for i, b in enumerate(bs) if sizes[d] <= b.hi) for d, bs in zip(self.dims, self.buckets))

    def hints(self, key: BucketKey) -> dict[str, int]:
        """{dim: representative size} of a key's buckets: the dim_hints its variants are scheduled under."""
        return {d: bs[i].size for d, bs, i in zip(self.dims, self.buckets, key)}

    def highs(self, key: BucketKey) -> dict[str, int]:
        """{dim: the largest size} of a key's buckets: what a variant's own buffers are sized for."""
        return {d: bs[i].hi for d, bs, i in zip(self.dims, self.buckets, key)}

    def project(self, key: BucketKey, dims) -> BucketKey:
        """The key with the dims not in `dims` at their opt bucket: a kernel over N alone has one
        variant for all of S's buckets."""
        opt = self.opt_key
        return tuple(k if d in dims else o for d, k, o in zip(self.dims, key, opt))

    def describe(self, key: BucketKey) -> str:
        return ",".join(f"{d}={bs[i]}" for d, bs, i in zip(self.dims, self.buckets, key))

    def to_json(self) -> dict[str, list[int]]:
        """{dim: the buckets' upper ends}: with the ranges, all a saved graph needs."""
        return {d: [b.hi for b in bs] for d, bs in zip(self.dims, self.buckets)}


BucketsArg = Union[None, bool, Mapping[str, Union[Sequence[int], str]]]


def bucket_plan(ranges: Mapping[str, DimRange], buckets: BucketsArg = None) -> BucketPlan:
    """The plan for a build's ranges: `buckets` None (the default ends each dim), False (one bucket
    a dim: every kernel compiled once, for opt), or {dim: upper ends, or "8,64"} (a dim not named
    takes the default ends). A dim named that has no range is one DynamicShapeError line."""
    given = {} if buckets in (None, True, False) else dict(buckets)
    unknown = sorted(set(given) - set(ranges))
    if unknown:
        raise DynamicShapeError(f"buckets name dim {unknown[0]!r}, which has no range "
                                f"(ranges: {', '.join(ranges) or 'none'})")
    dims = tuple(ranges)
    out = []
    for d in dims:
        r = ranges[d]
        if buckets is False:
            out.append((Bucket(r.min, r.max, r.opt),))
            continue
        ends = given.get(d)
        out.append(dim_buckets(d, r, None if ends is None else _ends(d, ends)))
    return BucketPlan(dims, tuple(out), tuple(ranges[d].opt for d in dims))


def _ends(name: str, ends: Union[Sequence[int], str]) -> tuple[int, ...]:
    if isinstance(ends, str):
        ends = ends.split(",")
    try:
        return tuple(int(e) for e in ends)
    except (TypeError, ValueError):
        raise DynamicShapeError(f"buckets of dim {name!r}: {ends!r} is not a list of sizes (e.g. 4,32,64)") from None


def parse_buckets(specs: Sequence[str]) -> dict[str, tuple[int, ...]]:
    """`["N=1,8,64"]` (the CLI's --buckets) -> {"N": (1, 8, 64)}."""
    return parse_named(specs, "--buckets", "NAME=end,end,... (e.g. N=4,32,64)", _ends)
