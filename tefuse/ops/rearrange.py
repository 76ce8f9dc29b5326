"""Rearranging ops: expand, tile, depth_to_space, space_to_depth, trilu (ONNX Expand, Tile,
DepthToSpace, SpaceToDepth, Trilu).

Each output element is one input element (or a zero) at an index computed from its position, so
all are lazy index functions: they cost no kernel of their own and fuse into their consumers'
loads and into injective chains. They are injective, not elementwise, even trilu (same shape):
it depends on where an element sits, so passes that move elementwise ops across layout changes
must leave it alone.
"""
from __future__ import annotations

from typing import Sequence

from tvm import tirx as tir
from tvm.ir.expr import Expr as PrimExpr

from ..errors import OpError
from .registry import OpPattern, register_op
from .value import Value, broadcast_shape, broadcast_to, dim_of, lazy

MODES = ("DCR", "CRD")  # depth-column-row (default), column-row-depth


@register_op("expand", OpPattern.INJECTIVE, num_inputs=1, attrs={"shape": ()})
def expand(inputs: Sequence[Value], attrs: dict) -> Value:
    """Broadcast to `shape` by numpy's rules, both ways (ONNX Expand): a dim of 1 on either side
    stretches to the other's, so the output may be larger than `shape`."""
    (x,) = inputs
    # a dim expression (a shape computed from symbolic dims at import) stays one
    want = tuple(dim_of(s) if isinstance(s, PrimExpr) else int(s) for s in attrs["shape"])
    if any(isinstance(s, int) and s < 0 for s in want):
        raise OpError(f"expand: shape {list(want)} has a negative dim")
    shape = broadcast_shape([x.shape, want], f"expand's input and shape {list(want)}")
    if shape == x.shape:
        return x
    return lazy(shape, x.dtype, broadcast_to(x, shape))


@register_op("tile", OpPattern.INJECTIVE, num_inputs=1, attrs={"repeats": ()})
def tile(inputs: Sequence[Value], attrs: dict) -> Value:
    """Repeat the whole tensor `repeats[k]` times along each axis k (ONNX Tile, numpy.tile with one
    repeat per axis)."""
    (x,) = inputs
    reps = [int(r) for r in attrs["repeats"]]
    if len(reps) != x.ndim or min(reps, default=0) < 0:
        raise OpError(f"tile: repeats must hold one non-negative int per axis ({x.ndim}), got {reps}")
    shape = tuple(s * r for s, r in zip(x.shape, reps))

    def fn(*i):
        return x(*[0 if s == 1 else (j if r == 1 else tir.floormod(j, s))
                   for j, s, r in zip(i, x.shape, reps)])

    return lazy(shape, x.dtype, fn)


def _block_check(op: str, x: Value, attrs: dict) -> int:
    b = int(attrs["blocksize"])
    if x.ndim != 4:
        raise OpError(f"{op}: expects a 4-D NCHW input, got shape {x.shape}")
    if b < 1:
        raise OpError(f"{op}: blocksize must be >= 1, got {b}")
    if attrs["mode"] not in MODES:
        raise OpError(f"{op}: mode must be DCR or CRD, got {attrs['mode']!r}")
    return b


@register_op("depth_to_space", OpPattern.INJECTIVE, num_inputs=1, attrs={"blocksize": 2, "mode": "DCR"})
def depth_to_space(inputs: Sequence[Value], attrs: dict) -> Value:
    """Move channel blocks into b x b spatial blocks, NCHW (ONNX DepthToSpace): channel
    (i*b + j)*C' + c (DCR) or c*b*b + i*b + j (CRD) becomes pixel (i, j) of channel c's block."""
    (x,) = inputs
    b = _block_check("depth_to_space", x, attrs)
    n, c, h, w = x.shape
    if c % (b * b):
        raise OpError(f"depth_to_space: {c} channels do not divide into blocks of {b}x{b}")
    co = c // (b * b)
    dcr = attrs["mode"] == "DCR"

    def fn(ni, ci, hi, wi):
        i, j = tir.floormod(hi, b), tir.floormod(wi, b)
        ch = (i * b + j) * co + ci if dcr else ci * (b * b) + i * b + j
        return x(ni, ch, tir.floordiv(hi, b), tir.floordiv(wi, b))

    return lazy((n, co, h * b, w * b), x.dtype, fn)


@register_op("space_to_depth", OpPattern.INJECTIVE, num_inputs=1, attrs={"blocksize": 2, "mode": "DCR"})
def space_to_depth(inputs: Sequence[Value], attrs: dict) -> Value:
    """Move b x b spatial blocks into channels, NCHW (ONNX SpaceToDepth; depth_to_space's inverse
    in the same mode)."""
    (x,) = inputs
    b = _block_check("space_to_depth", x, attrs)
    n, c, h, w = x.shape
    if h % b or w % b:
        raise OpError(f"space_to_depth: spatial dims {h}x{w} do not divide into blocks of {b}x{b}")
    dcr = attrs["mode"] == "DCR"

    def fn(ni, ch, hi, wi):
        if dcr:
            blk, ci = tir.floordiv(ch, c), tir.floormod(ch, c)
        else:
            blk, ci = tir.floormod(ch, b * b), tir.floordiv(ch, b * b)
        return x(ni, ci, hi * b + tir.floordiv(blk, b), wi * b + tir.floormod(blk, b))

    return lazy((n, c * b * b, h // b, w // b), x.dtype, fn)


@register_op("trilu", OpPattern.INJECTIVE, num_inputs=1, attrs={"upper": True, "k": 0})
def trilu(inputs: Sequence[Value], attrs: dict) -> Value:
    """The upper (j - i >= k) or lower (j - i <= k) triangle of the last two axes, zeros elsewhere
    (ONNX Trilu); k may be negative or beyond the matrix (everything or nothing kept)."""
    (x,) = inputs
    if x.ndim < 2:
        raise OpError(f"trilu: expects at least 2 dims, got shape {x.shape}")
    rows, cols = x.shape[-2], x.shape[-1]
    k = min(max(int(attrs["k"]), -rows), cols)  # beyond the matrix every k acts the same
    upper = bool(attrs["upper"])
    zero = tir.const(0, x.dtype)

    def fn(*i):
        d = i[-1] - i[-2]
        return tir.Select(d >= k if upper else d <= k, x(*i), zero)

    return lazy(x.shape, x.dtype, fn)
