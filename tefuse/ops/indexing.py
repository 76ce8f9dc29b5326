"""Ops that read or write at indices known only at run time: take (ONNX Gather),
gather_elements, gather_nd, one_hot (injective: one read per output element, so they fuse with
what follows), argmax / argmin and topk (reductions along an axis), scatter_nd and
scatter_elements (each output element scans the updates).

Indices follow ONNX: a negative index counts from the end of its axis (idx + dim). An index
outside [-dim, dim) cannot be refused at run time on a GPU (onnxruntime raises), so it never
reads out of bounds: a read clamps its address to the axis (an index >= dim reads the last
element, one < -dim the first), and a scatter drops such an update.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from tvm import te, tirx as tir

from ..errors import OpError
from .nanprop import fmax, fmin, from_key, has_order_key, highest, lowest, order_key
from .registry import OpPattern, register_op
from .value import Value, acc_dtype, expr_dtype, lazy, te_compute, unbind
from .reduce import ReduceGeometry

INDEX_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def _axis(ax: int, nd: int, op: str) -> int:
    a = ax + nd if ax < 0 else ax
    if not 0 <= a < nd:
        raise OpError(f"{op}: axis {ax} out of range for rank {nd}")
    return a


def _check_indices(op: str, idx: Value, what: str = "indices") -> None:
    if idx.dtype not in INDEX_DTYPES:
        raise OpError(f"{op}: {what} must be an integer tensor, got {idx.dtype}")


def _loop_dtype(idx: Sequence) -> str:
    """The index type of the loop variables an output element is addressed with (int64 in a
    kernel over more than 2^31 - 1 elements), to address the data with the same type."""
    return next((expr_dtype(i) for i in idx if not isinstance(i, int)), "int32")


def _extent(dim, dtype: str):
    """An axis' size in the index's type: a constant, or a symbolic dim cast to it."""
    return tir.const(dim, dtype) if isinstance(dim, int) else tir.Cast(dtype, dim)


def wrap(j, dim: int):
    """An ONNX index as a signed 64-bit (or 32-bit, where the axis fits it) value, or unsigned 64-bit:
    a negative one counts from the end (j + dim). Narrow index types are widened first, so that
    an int8 -1 into an axis of 200 is 199, not an overflow."""
    dt = expr_dtype(j)
    if dt == "uint64":
        return j
    if dt != "int64" and not (dt == "int32" and isinstance(dim, int) and dim <= 2 ** 31 - 1):
        j, dt = tir.Cast("int64", j), "int64"
    return tir.Select(j < tir.const(0, dt), j + _extent(dim, dt), j)


def address(j, dim: int, dtype: str):
    """Index j of an axis of `dim` elements as a safe address of type `dtype`: wrapped when
    negative, then clamped into [0, dim) (out-of-range indices read the nearest end). Lets in j
    (an index computed by ops) are put in place: the address repeats j."""
    w = wrap(unbind(j), dim)
    dt = expr_dtype(w)
    w = tir.min(w, _extent(dim - 1, dt))
    if dt != "uint64":
        w = tir.max(w, tir.const(0, dt))
    return w if dt == dtype else tir.Cast(dtype, w)


def matches(j, dim: int, pos):
    """Whether ONNX index j (any integer dtype) names position `pos` of an axis of `dim`
    elements; an index outside [-dim, dim) names none."""
    w = wrap(j, dim)
    dt = expr_dtype(w)
    below = w < _extent(dim, dt)
    in_range = below if dt == "uint64" else tir.all(w >= tir.const(0, dt), below)
    return tir.all(in_range, w == tir.Cast(dt, pos))


# -- reads ---------------------------------------------------------------------------------
@register_op("take", OpPattern.INJECTIVE, num_inputs=2, attrs={"axis": 0})
def take(inputs: Sequence[Value], attrs: dict) -> Value:
    """ONNX Gather: out[a.., i.., b..] = data[a.., idx[i..], b..] along `axis`, the indices
    computed at run time (token ids into an embedding table). An index outside [-dim, dim)
    reads the nearest end of the axis (clamped; onnxruntime raises instead)."""
    data, idx = inputs
    _check_indices("take", idx)
    ax = _axis(attrs["axis"], data.ndim, "take")
    q, dim = idx.ndim, data.shape[ax]
    shape = data.shape[:ax] + idx.shape + data.shape[ax + 1:]

    def fn(*i):
        j = address(idx(*i[ax:ax + q]), dim, _loop_dtype(i))
        return data(*i[:ax], j, *i[ax + q:])

    return lazy(shape, data.dtype, fn)


@register_op("gather_elements", OpPattern.INJECTIVE, num_inputs=2, attrs={"axis": 0})
def gather_elements(inputs: Sequence[Value], attrs: dict) -> Value:
    """ONNX GatherElements (torch.gather): out[i] = data[i with i[axis] = idx[i]]; the output
    has the indices' shape. Out-of-range indices read the nearest end of the axis."""
    data, idx = inputs
    _check_indices("gather_elements", idx)
    ax = _axis(attrs["axis"], data.ndim, "gather_elements")
    if idx.ndim != data.ndim or any(idx.shape[d] > data.shape[d] for d in range(data.ndim) if d != ax):
        raise OpError(f"gather_elements: indices {idx.shape} must have data's rank and fit data {data.shape} "
                      f"off axis {ax}")
    dim = data.shape[ax]

    def fn(*i):
        j = list(i)
        j[ax] = address(idx(*i), dim, _loop_dtype(i))
        return data(*j)

    return lazy(idx.shape, data.dtype, fn)


@register_op("gather_nd", OpPattern.INJECTIVE, num_inputs=2, attrs={"batch_dims": 0})
def gather_nd(inputs: Sequence[Value], attrs: dict) -> Value:
    """ONNX GatherND: the last axis of the indices (k entries) addresses data's first k axes
    after `batch_dims` shared leading ones; the rest of data is copied whole. Out-of-range
    indices read the nearest end of their axis."""
    data, idx = inputs
    _check_indices("gather_nd", idx)
    b = int(attrs["batch_dims"])
    if idx.ndim < 1 or not 0 <= b < min(idx.ndim, data.ndim):
        raise OpError(f"gather_nd: batch_dims={b} must be below both ranks ({data.ndim}, {idx.ndim})")
    k = idx.shape[-1]
    if not 1 <= k <= data.ndim - b or idx.shape[:b] != data.shape[:b]:
        raise OpError(f"gather_nd: indices {idx.shape} do not address data {data.shape} with batch_dims={b}")
    q = idx.ndim
    shape = idx.shape[:-1] + data.shape[b + k:]

    def fn(*i):
        dt = _loop_dtype(i)
        head = list(i[:q - 1])
        addr = [address(idx(*head, t), data.shape[b + t], dt) for t in range(k)]
        return data(*i[:b], *addr, *i[q - 1:])

    return lazy(shape, data.dtype, fn)


@register_op("one_hot", OpPattern.INJECTIVE, num_inputs=2, attrs={"depth": 1, "axis": -1})
def one_hot(inputs: Sequence[Value], attrs: dict) -> Value:
    """ONNX OneHot: a new axis of `depth` at `axis`, values[1] where it equals the index (a
    negative index counts from the end), values[0] elsewhere; an index outside [-depth, depth)
    gives values[0] throughout. `values` is [off, on]; float indices are truncated."""
    idx, values = inputs
    depth = int(attrs["depth"])
    if depth < 1:
        raise OpError(f"one_hot: depth must be at least 1, got {depth}")
    if values.shape != (2,):
        raise OpError(f"one_hot: values must have shape (2,) (off, on), got {values.shape}")
    ax = _axis(attrs["axis"], idx.ndim + 1, "one_hot")
    shape = idx.shape[:ax] + (depth,) + idx.shape[ax:]
    it = idx.dtype if idx.dtype in INDEX_DTYPES else "int64"

    def fn(*i):
        j = idx(*i[:ax], *i[ax + 1:])
        if expr_dtype(j) != it:
            j = tir.Cast(it, j)
        return tir.Select(matches(j, depth, i[ax]), values(1), values(0))

    return lazy(shape, values.dtype, fn)


# -- arg reductions ------------------------------------------------------------------------
def _arg_geometry(in_shapes, out_shape, attrs: dict) -> ReduceGeometry:
    shape = in_shapes[0]
    ax = int(attrs["axis"]) % len(shape)
    return ReduceGeometry(max(1, math.prod(shape) // shape[ax]), shape[ax], ax == len(shape) - 1, (ax,))


def _key32(x):
    """A signed integer (at most 32 bits) whose order is x's: floats by their order key (a NaN
    beyond every number, as numpy's argmax and argmin find it first), integers as they are."""
    dt = expr_dtype(x)
    if dt == "bool":
        return tir.Cast("int32", x)
    if dt == "uint32":  # shifted into int32's range, order kept
        return tir.Cast("int64", x) - tir.const(1 << 31, "int64")
    return x


PACKABLE = ("float32", "float16", "bfloat16", "int8", "int16", "int32", "uint8", "uint16", "uint32", "bool")
_LOW = 1 << 32


def _arg(kind: str, inputs: Sequence[Value], attrs: dict) -> Value:
    """One reduction over a 64-bit key per element: x's order key in the high 32 bits, the
    position (its complement where the first of equal elements must win a max) in the low ones;
    so a built-in max/min does it, which every reduction template (cross-thread too) takes."""
    (x,) = inputs
    op = f"arg{kind}"
    if x.dtype not in PACKABLE:
        raise OpError(f"{op}: {x.dtype} input is not supported (its value and position must fit a 64-bit key; "
                      f"supported: {', '.join(PACKABLE)})")
    ax = _axis(attrs["axis"], x.ndim, op)
    n = x.shape[ax]
    last = bool(attrs["select_last_index"])
    flip = (kind == "max") != last  # the low bits hold n-1-m: smaller positions win ties
    r = te.reduce_axis((0, n), "r")
    keep = bool(attrs["keepdims"])
    shape = tuple(1 if a == ax else s for a, s in enumerate(x.shape)) if keep else \
        tuple(s for a, s in enumerate(x.shape) if a != ax)

    def key(*i):
        j = list(i)
        if keep:
            j[ax] = r
        else:
            j.insert(ax, r)
        v = x(*j)
        high = order_key(v, kind) if has_order_key(x.dtype) else _key32(v)
        m = tir.Cast("int64", r)
        low = tir.const(n - 1, "int64") - m if flip else m
        return tir.Cast("int64", high) * tir.const(_LOW, "int64") + low

    red = te_compute(shape, lambda *i: (te.max if kind == "max" else te.min)(key(*i), axis=[r]),
                     name=op, tag="reduce")

    def fn(*i):
        low = tir.floormod(red(*i), tir.const(_LOW, "int64"))
        return tir.const(n - 1, "int64") - low if flip else low

    return lazy(shape, "int64", fn)


_ARG_ATTRS = {"axis": 0, "keepdims": True, "select_last_index": False}


@register_op("argmax", OpPattern.COMM_REDUCE, anchor="reduce", num_inputs=1, attrs=_ARG_ATTRS,
             geometry=_arg_geometry)
def argmax(inputs: Sequence[Value], attrs: dict) -> Value:
    """Position (int64) of the largest element along `axis`, the first of equal ones (the last
    with select_last_index); a NaN counts as the largest, as numpy's argmax finds it."""
    return _arg("max", inputs, attrs)


@register_op("argmin", OpPattern.COMM_REDUCE, anchor="reduce", num_inputs=1, attrs=_ARG_ATTRS,
             geometry=_arg_geometry)
def argmin(inputs: Sequence[Value], attrs: dict) -> Value:
    """Position (int64) of the smallest element along `axis`, the first of equal ones (the last
    with select_last_index); a NaN counts as the smallest, as numpy's argmin finds it."""
    return _arg("min", inputs, attrs)


# -- top-k -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class TopKGeometry:
    """topk along `axis`: `rows` rows of `extent` elements, `k` of each kept."""

    rows: int
    extent: int
    k: int
    axis: int


def _topk_geometry(in_shapes, out_shape, attrs: dict) -> TopKGeometry:
    shape = in_shapes[0]
    ax = int(attrs["axis"]) % len(shape)
    return TopKGeometry(max(1, math.prod(shape) // shape[ax]), shape[ax], int(attrs["k"]), ax)


@register_op("topk", OpPattern.COMM_REDUCE, anchor="topk", num_inputs=1,
             attrs={"k": 1, "axis": -1, "largest": True}, geometry=_topk_geometry)
def topk(inputs: Sequence[Value], attrs: dict) -> Value:
    """Positions (int64) of the k largest (smallest) elements along `axis`, in order, equal
    elements by position (ONNX TopK's indices; gather_elements reads the values).

    By rank counting: an element's rank is the number of elements before it in that order (one
    reduction over the axis), the r-th output the position whose rank is r (another). That is
    O(n^2) a row: meant for the axes TopK takes in models (classification heads, beam widths,
    up to a few thousand), not for sorting long rows. Floats compare by order key, so NaN, -0
    and +0 have a place and ranks are a permutation."""
    (x,) = inputs
    ax = _axis(attrs["axis"], x.ndim, "topk")
    n, k = x.shape[ax], int(attrs["k"])
    if not 1 <= k <= n:
        raise OpError(f"topk: k={k} outside 1..{n} (the axis' extent)")
    largest = bool(attrs["largest"])
    kind = "max" if largest else "min"

    def key(v):
        return order_key(v, kind) if has_order_key(x.dtype) else v

    xin = x.materialize("topk_in") if x.is_lazy else x.tensor
    lrange = te.reduce_axis((0, n), "l")

    def before(i):  # elements ranked ahead of x[i]: better, or equal and earlier
        j = list(i)
        j[ax] = lrange
        a, b = key(xin(*j)), key(xin(*i))
        better = a > b if largest else a < b
        return tir.Select(tir.Or(better, tir.And(a == b, lrange < i[ax])), tir.const(1, "int32"),
                          tir.const(0, "int32"))

    rank = te_compute(x.shape, lambda *i: te.sum(before(i), axis=[lrange]), name="topk_rank", tag="topk")
    shape = tuple(k if a == ax else s for a, s in enumerate(x.shape))
    jrange = te.reduce_axis((0, n), "j")

    def pick(*i):
        j = list(i)
        j[ax] = jrange
        return te.sum(tir.Select(rank(*j) == tir.Cast("int32", i[ax]), tir.Cast("int64", jrange),
                                 tir.const(0, "int64")), axis=[jrange])

    return Value.of_tensor(te_compute(shape, pick, name="topk", tag="topk"))


# -- scatters --------------------------------------------------------------------------------
@dataclass(frozen=True)
class ScatterGeometry:
    """A scatter: `rows` output elements, each scanning `extent` update slots."""

    rows: int
    extent: int


REDUCTIONS = ("none", "add", "mul", "max", "min")
_PRODUCT = te.comm_reducer(lambda a, b: a * b, lambda t: tir.const(1, t), name="product")


def _fold(reduction: str, match, update, axes, dtype: str):
    """The updates whose `match` holds folded together as `reduction` (add, mul, max, min) says:
    a sum or product in acc_dtype, floats' max/min over order keys (NaN propagates), so that
    every reducer is one TVM knows (the templates' cross-thread reductions match only those)."""
    acc = acc_dtype(dtype)
    if reduction in ("add", "mul"):
        u = tir.Cast(acc, update) if acc != dtype else update
        if reduction == "add":
            return te.sum(tir.Select(match, u, tir.const(0, acc)), axis=axes)
        return _PRODUCT(tir.Select(match, u, tir.const(1, acc)), axis=axes)
    red = te.max if reduction == "max" else te.min
    ident = lowest(dtype) if reduction == "max" else highest(dtype)
    if has_order_key(dtype):  # keys of the update and of the identity: `match` is written once
        return red(tir.Select(match, order_key(update, reduction), order_key(ident, reduction)), axis=axes)
    return red(tir.Select(match, update, ident), axis=axes)


def _scatter(op: str, data: Value, reduction: str, slot_axes, match_fn, update_fn):
    """The scatter's two stages: a reduction over the update slots per output element, and
    the output read from it and data. match_fn(o, slots) / update_fn(o, slots) give whether a
    slot writes output element o and the value it brings; `slot_axes` are the reduce axes."""
    if reduction not in REDUCTIONS:
        raise OpError(f"{op}: reduction must be one of {', '.join(REDUCTIONS)}, got {reduction!r}")
    dtype = data.dtype
    if reduction == "none":
        sizes = [int(ax.dom.extent) for ax in slot_axes]

        def last(*o):
            flat = tir.const(0, "int32")
            for ax, s in zip(slot_axes, sizes):
                flat = flat * s + ax.var
            return te.max(tir.Select(match_fn(o, slot_axes), flat, tir.const(-1, "int32")), axis=list(slot_axes))

        red = te_compute(data.shape, last, name=f"{op}_last", tag=op)

        def out(*o):
            m = red(*o)
            slots, rest = [], tir.max(m, tir.const(0, "int32"))
            for s in reversed(sizes):
                slots.append(tir.floormod(rest, s))
                rest = tir.floordiv(rest, s)
            return tir.Select(m >= tir.const(0, "int32"), update_fn(o, list(reversed(slots))), data(*o))

        return lazy(data.shape, dtype, out)
    red = te_compute(data.shape, lambda *o: _fold(reduction, match_fn(o, slot_axes), update_fn(o, slot_axes),
                                                  list(slot_axes), dtype), name=f"{op}_{reduction}", tag=op)
    acc = acc_dtype(dtype)

    def out(*o):
        r, d = red(*o), data(*o)
        if reduction == "add":
            return tir.Cast(dtype, tir.Cast(acc, d) + r) if acc != dtype else d + r
        if reduction == "mul":
            return tir.Cast(dtype, tir.Cast(acc, d) * r) if acc != dtype else d * r
        if has_order_key(dtype):
            r = from_key(r, dtype, reduction)
        return fmax(d, r) if reduction == "max" else fmin(d, r)

    return lazy(data.shape, dtype, out)


def _scatter_nd_geometry(in_shapes, out_shape, attrs: dict) -> ScatterGeometry:
    return ScatterGeometry(max(1, math.prod(out_shape)), max(1, math.prod(in_shapes[1][:-1])))


def _scatter_elements_geometry(in_shapes, out_shape, attrs: dict) -> ScatterGeometry:
    ax = int(attrs["axis"]) % len(out_shape)
    return ScatterGeometry(max(1, math.prod(out_shape)), in_shapes[1][ax])


@register_op("scatter_nd", OpPattern.COMM_REDUCE, anchor="scatter", num_inputs=3,
             attrs={"reduction": "none"}, geometry=_scatter_nd_geometry)
def scatter_nd(inputs: Sequence[Value], attrs: dict) -> Value:
    """ONNX ScatterND with indices known at run time: data with updates written (or folded in:
    add, mul, max, min) at the positions the indices' last axis names. Each output element
    scans every update slot, O(elements x slots): fine for the slot counts exporters write
    (slice assignments, cache updates), not a general scatter. Of duplicate positions with
    reduction none the last slot wins; an update whose index is outside [-dim, dim) is dropped."""
    data, idx, upd = inputs
    _check_indices("scatter_nd", idx)
    k = idx.shape[-1] if idx.ndim else 0
    lead = idx.shape[:-1]
    if idx.ndim < 1 or not 1 <= k <= data.ndim or upd.shape != lead + data.shape[k:]:
        raise OpError(f"scatter_nd: indices {idx.shape} and updates {upd.shape} do not fit data {data.shape} "
                      f"(updates must be indices.shape[:-1] + data.shape[k:])")
    if upd.dtype != data.dtype:
        raise OpError(f"scatter_nd: updates are {upd.dtype}, data {data.dtype}")
    if math.prod(lead) == 0:
        return data
    slots = [te.reduce_axis((0, s), f"m{d}") for d, s in enumerate(lead)] or [te.reduce_axis((0, 1), "m0")]

    def match(o, m):
        m = list(m)[:len(lead)]
        return tir.all(*[matches(idx(*m, t), data.shape[t], o[t]) for t in range(k)])

    def update(o, m):
        return upd(*list(m)[:len(lead)], *o[k:])

    return _scatter("scatter_nd", data, attrs["reduction"], slots, match, update)


@register_op("scatter_elements", OpPattern.COMM_REDUCE, anchor="scatter", num_inputs=3,
             attrs={"axis": 0, "reduction": "none"}, geometry=_scatter_elements_geometry)
def scatter_elements(inputs: Sequence[Value], attrs: dict) -> Value:
    """ONNX ScatterElements with indices known at run time: update u[j] goes to data[j with
    j[axis] = idx[j]]. Each output element scans the updates along `axis` at its own position
    off the axis, O(elements x that extent). Of duplicates with reduction none the last wins;
    an update whose index is outside [-dim, dim) is dropped."""
    data, idx, upd = inputs
    _check_indices("scatter_elements", idx)
    ax = _axis(attrs["axis"], data.ndim, "scatter_elements")
    if idx.shape != upd.shape or idx.ndim != data.ndim or any(
            idx.shape[d] > data.shape[d] for d in range(data.ndim) if d != ax):
        raise OpError(f"scatter_elements: indices {idx.shape} and updates {upd.shape} must have one shape, "
                      f"data's rank, and fit data {data.shape} off axis {ax}")
    if upd.dtype != data.dtype:
        raise OpError(f"scatter_elements: updates are {upd.dtype}, data {data.dtype}")
    dim = data.shape[ax]
    slot = te.reduce_axis((0, idx.shape[ax]), "m")

    def at(o, m):  # the update position scanned, its address clamped inside the updates
        j = [tir.min(o[d], tir.const(idx.shape[d] - 1, expr_dtype(o[d]))) if idx.shape[d] < data.shape[d]
             else o[d] for d in range(data.ndim)]
        j[ax] = m
        return j

    def inside(o):  # output positions off the axis that some update reaches
        conds = [o[d] < idx.shape[d] for d in range(data.ndim) if d != ax and idx.shape[d] < data.shape[d]]
        return tir.all(*conds) if conds else None

    def match(o, m):
        hit = matches(idx(*at(o, m[0])), dim, o[ax])
        cond = inside(o)
        return hit if cond is None else tir.all(cond, hit)

    def update(o, m):
        return upd(*at(o, m[0]))

    return _scatter("scatter_elements", data, attrs["reduction"], [slot], match, update)
