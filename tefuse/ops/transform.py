"""Injective layout ops: pad, reshape, flatten, transpose, concat, squeeze/unsqueeze,
slice, layout_transform. All lazy: they fuse as prologues or into injective groups."""
from __future__ import annotations

from typing import Sequence

from tvm import tirx as tir
from tvm.ir.expr import Expr as PrimExpr

from ..errors import OpError
from .registry import OpPattern, register_op
from .value import Value, current_dim_limits, dim_of, dim_product, dim_quotient, eval_dim, lazy, same_dim


def _axis(ax: int, nd: int, name: str) -> int:
    a = ax + nd if ax < 0 else ax
    if not 0 <= a < nd:
        raise OpError(f"{name}: axis {ax} out of range for rank {nd}")
    return a


@register_op("pad", OpPattern.INJECTIVE, num_inputs=1, attrs={"pads": (), "value": 0.0})
def pad(inputs: Sequence[Value], attrs: dict) -> Value:
    """Constant pad; `pads` is ONNX-style (begin_0..begin_n, end_0..end_n)."""
    (x,) = inputs
    p = [int(v) for v in attrs["pads"]]
    if len(p) != 2 * x.ndim or min(p) < 0:
        raise OpError(f"pad: pads must hold 2*rank={2 * x.ndim} non-negative ints, got {p}")
    begin, end = p[:x.ndim], p[x.ndim:]
    shape = tuple(s + b + e for s, b, e in zip(x.shape, begin, end))
    fill = tir.const(attrs["value"], x.dtype)

    def fn(*i):
        conds = [tir.all(i[k] >= begin[k], i[k] < begin[k] + x.shape[k])
                 for k in range(x.ndim) if begin[k] or end[k]]
        val = x(*[i[k] - begin[k] for k in range(x.ndim)])
        return tir.if_then_else(tir.all(*conds), val, fill) if conds else val

    return lazy(shape, x.dtype, fn)


@register_op("pad_mode", OpPattern.INJECTIVE, num_inputs=1, attrs={"pads": (), "mode": "edge"})
def pad_mode(inputs: Sequence[Value], attrs: dict) -> Value:
    """Pad by reading the input itself (ONNX Pad's modes): `edge` repeats the border, `reflect`
    mirrors without repeating it, `wrap` continues from the other side. `pads` as for pad."""
    (x,) = inputs
    p, mode = [int(v) for v in attrs["pads"]], attrs["mode"]
    if len(p) != 2 * x.ndim or min(p) < 0:
        raise OpError(f"pad_mode: pads must hold 2*rank={2 * x.ndim} non-negative ints, got {p}")
    if mode not in ("edge", "reflect", "wrap"):
        raise OpError(f"pad_mode: mode must be edge, reflect or wrap, got {mode!r}")
    begin, end = p[:x.ndim], p[x.ndim:]
    if mode == "reflect" and any((b or e) and max(b, e) > n - 1 for b, e, n in zip(begin, end, x.shape)):
        raise OpError(f"pad_mode: reflect pads {p} must be below each padded dim of shape {x.shape}")
    shape = tuple(s + b + e for s, b, e in zip(x.shape, begin, end))

    def index(i, b, n):
        j = i - b
        if mode == "edge":
            return tir.max(tir.min(j, n - 1), 0)
        if mode == "wrap":
            return tir.floormod(j, n)
        j = tir.abs(j)  # reflect: -j before the start, 2(n-1) - j past the end
        return tir.Select(j > n - 1, 2 * (n - 1) - j, j)

    def fn(*i):
        return x(*[index(i[k], begin[k], x.shape[k]) if begin[k] or end[k] else i[k] for k in range(x.ndim)])

    return lazy(shape, x.dtype, fn)


def _unravel(flat, shape):
    idx = []
    for s in reversed(shape):
        idx.append(tir.floormod(flat, s) if s != 1 else tir.const(0, "int32"))
        flat = tir.floordiv(flat, s)
    return list(reversed(idx))


def _ravel(idx, shape):
    flat = tir.const(0, "int32")
    for i, s in zip(idx, shape):
        flat = flat * s + i
    return flat


@register_op("reshape", OpPattern.INJECTIVE, num_inputs=1, attrs={"shape": ()})
def reshape(inputs: Sequence[Value], attrs: dict) -> Value:
    """Reshape with numpy/ONNX rules (-1 infers one dim, 0 copies the input dim)."""
    (x,) = inputs
    req = [dim_of(s) for s in attrs["shape"]]
    shape = [x.shape[k] if isinstance(s, int) and s == 0 and k < x.ndim else s for k, s in enumerate(req)]
    infer = [k for k, s in enumerate(shape) if isinstance(s, int) and s == -1]
    if len(infer) > 1:
        raise OpError(f"reshape: at most one -1 allowed, got {req}")
    if infer:
        rest = dim_quotient(x.shape, [s for k, s in enumerate(shape) if k != infer[0]])
        if rest is None or (isinstance(rest, int) and rest == 0):
            raise OpError(f"reshape: cannot infer -1 reshaping {x.shape} to {req}")
        shape[infer[0]] = rest
    if dim_quotient(x.shape, shape) != 1 or dim_quotient(shape, x.shape) != 1:
        raise OpError(f"reshape: {x.shape} ({dim_product(x.shape)} elements) cannot become {tuple(shape)}")
    shape = tuple(shape)
    if shape == x.shape:
        return x
    # dims both shapes begin or end with keep their index: only the middle is raveled again, so
    # a symbolic batch or sequence never divides an index ([N, S, 8] <-> [N, S, 2, 4])
    head = 0
    while head < min(len(shape), x.ndim) and same_dim(shape[head], x.shape[head]):
        head += 1
    tail = 0
    while (tail < min(len(shape), x.ndim) - head
           and same_dim(shape[len(shape) - 1 - tail], x.shape[x.ndim - 1 - tail])):
        tail += 1
    out_mid, in_mid = shape[head:len(shape) - tail], x.shape[head:x.ndim - tail]

    def fn(*i):
        mid = _unravel(_ravel(i[head:len(shape) - tail], out_mid), in_mid)
        return x(*i[:head], *mid, *i[len(shape) - tail:])

    return lazy(shape, x.dtype, fn)


@register_op("flatten", OpPattern.INJECTIVE, num_inputs=1, attrs={"axis": 1})
def flatten(inputs: Sequence[Value], attrs: dict) -> Value:
    """2-D view: dims before `axis` and from `axis` on (ONNX Flatten)."""
    (x,) = inputs
    ax = attrs["axis"] + x.ndim if attrs["axis"] < 0 else attrs["axis"]
    if not 0 <= ax <= x.ndim:
        raise OpError(f"flatten: axis {attrs['axis']} out of range for rank {x.ndim}")
    shape = (dim_product(x.shape[:ax]), dim_product(x.shape[ax:]))
    return reshape([x], {"shape": shape})


@register_op("transpose", OpPattern.INJECTIVE, num_inputs=1, attrs={"axes": None})
def transpose(inputs: Sequence[Value], attrs: dict) -> Value:
    """Permute dims (reverse when axes is None)."""
    (x,) = inputs
    axes = list(range(x.ndim))[::-1] if attrs["axes"] is None else [_axis(a, x.ndim, "transpose") for a in attrs["axes"]]
    if sorted(axes) != list(range(x.ndim)):
        raise OpError(f"transpose: axes {attrs['axes']} is not a permutation of rank {x.ndim}")
    inv = [axes.index(k) for k in range(x.ndim)]
    return lazy(tuple(x.shape[a] for a in axes), x.dtype, lambda *i: x(*[i[inv[k]] for k in range(x.ndim)]))


_LAYOUT_PERM = {("NCHW", "NHWC"): (0, 2, 3, 1), ("NHWC", "NCHW"): (0, 3, 1, 2)}


@register_op("layout_transform", OpPattern.INJECTIVE, num_inputs=1, attrs={"src": "NCHW", "dst": "NHWC"})
def layout_transform(inputs: Sequence[Value], attrs: dict) -> Value:
    """NCHW <-> NHWC."""
    key = (attrs["src"], attrs["dst"])
    if key not in _LAYOUT_PERM:
        raise OpError(f"layout_transform: unsupported {key[0]} -> {key[1]}")
    return transpose(inputs, {"axes": _LAYOUT_PERM[key]})


@register_op("concat", OpPattern.INJECTIVE, attrs={"axis": 0}, picks_input=True)
def concat(inputs: Sequence[Value], attrs: dict) -> Value:
    """Concatenate along `axis`."""
    if not inputs:
        raise OpError("concat: needs at least one input")
    nd = inputs[0].ndim
    ax = _axis(attrs["axis"], nd, "concat")
    for v in inputs:
        if v.ndim != nd or not all(same_dim(v.shape[k], inputs[0].shape[k]) for k in range(nd) if k != ax):
            raise OpError(f"concat: shapes {[v.shape for v in inputs]} differ off axis {ax}")
        if v.dtype != inputs[0].dtype:
            raise OpError(f"concat: dtypes differ: {[v.dtype for v in inputs]}")
    offs = [0]  # where each input starts along the axis: ints, or expressions of symbolic dims
    for v in inputs:
        offs.append(dim_of(offs[-1] + dim_of(v.shape[ax])))
    shape = list(inputs[0].shape)
    shape[ax] = offs[-1]

    def fn(*i):
        def at(k, v):
            j = list(i)
            j[ax] = i[ax] - offs[k]
            return v(*j)
        expr = at(len(inputs) - 1, inputs[-1])
        for k in range(len(inputs) - 2, -1, -1):
            expr = tir.if_then_else(i[ax] < offs[k + 1], at(k, inputs[k]), expr)
        return expr

    return lazy(shape, inputs[0].dtype, fn)


@register_op("squeeze", OpPattern.INJECTIVE, num_inputs=1, attrs={"axes": None})
def squeeze(inputs: Sequence[Value], attrs: dict) -> Value:
    """Drop size-1 dims (all of them when axes is None)."""
    (x,) = inputs
    axes = [k for k, s in enumerate(x.shape) if s == 1] if attrs["axes"] is None else \
        [_axis(a, x.ndim, "squeeze") for a in attrs["axes"]]
    for a in axes:
        if x.shape[a] != 1:
            raise OpError(f"squeeze: dim {a} of {x.shape} is not 1")
    return reshape([x], {"shape": tuple(s for k, s in enumerate(x.shape) if k not in axes)})


@register_op("expand_dims", OpPattern.INJECTIVE, num_inputs=1, attrs={"axes": ()})
def expand_dims(inputs: Sequence[Value], attrs: dict) -> Value:
    """Insert size-1 dims at `axes` (positions in the output, ONNX Unsqueeze)."""
    (x,) = inputs
    nd = x.ndim + len(attrs["axes"])
    axes = sorted(_axis(a, nd, "expand_dims") for a in attrs["axes"])
    shape = list(x.shape)
    for a in axes:
        shape.insert(a, 1)
    return reshape([x], {"shape": tuple(shape)})


def _symbolic_end(dim, start: int, end, step: int):
    """(begin, step, extent) of a slice from a fixed start to a dim expression: ONNX clamps the end
    to the axis, which an expression cannot be; so the end must lie within it at every size in
    force (`dim_limits`: the build's ranges), as a position-id buffer cut to a sequence length."""
    if step != 1 or start < 0 or isinstance(dim, PrimExpr):
        raise OpError(f"slice: an end of {end} takes a fixed axis, a start >= 0 and step 1")
    try:  # the end at the ranges' max, where every dim it holds has a range in force
        hi = eval_dim(end, {k: v[1] for k, v in current_dim_limits().items()})
    except OpError:
        hi = None
    if hi is not None and hi > dim:
        raise OpError(f"slice: end {end} reaches {hi} at the range's max, past the axis's {dim}")
    return start, 1, dim_of(end - start)


@register_op("slice", OpPattern.INJECTIVE, num_inputs=1,
             attrs={"starts": (), "ends": (), "axes": None, "steps": None})
def slice_(inputs: Sequence[Value], attrs: dict) -> Value:
    """Strided slice with numpy/ONNX clamping rules (positive or negative steps)."""
    (x,) = inputs
    axes = list(range(len(attrs["starts"]))) if attrs["axes"] is None else \
        [_axis(a, x.ndim, "slice") for a in attrs["axes"]]
    steps = attrs["steps"] or [1] * len(axes)
    begin = [0] * x.ndim
    step = [1] * x.ndim
    shape = list(x.shape)
    for a, s, e, st in zip(axes, attrs["starts"], attrs["ends"], steps):
        if st == 0:
            raise OpError("slice: step 0")
        if isinstance(e, PrimExpr) and not isinstance(e, tir.IntImm):
            begin[a], step[a], shape[a] = _symbolic_end(x.shape[a], int(s), dim_of(e), int(st))
            continue
        rng = range(x.shape[a])[slice(int(s), int(e), int(st))]
        begin[a], step[a], shape[a] = (rng.start if len(rng) else 0), st, len(rng)
    return lazy(shape, x.dtype, lambda *i: x(*[begin[k] + i[k] * step[k] for k in range(x.ndim)]))
