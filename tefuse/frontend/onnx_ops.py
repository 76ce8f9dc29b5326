"""ONNX op converters, one registry entry per op type (no if-chains in the importer).

A converter maps one ONNX node onto tefuse ops with `ctx.emit`, and returns one value per
ONNX output (a graph Node, or a numpy array when the result is known at import time).
Attributes a converter does not list are refused by name before it runs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np

from ..graph.ir import Node
from .onnx import ImportContext, OnnxNode, Unsupported, Value

ConvertFn = Callable[[ImportContext, OnnxNode], list]
FoldFn = Callable[[ImportContext, OnnxNode], Optional[list]]
CheckFn = Callable[[OnnxNode], Optional[str]]


@dataclass(frozen=True)
class Converter:
    fn: ConvertFn
    attrs: frozenset[str]
    foldable: bool = True  # all-constant inputs: evaluate at import instead of converting
    check: Optional[CheckFn] = None  # attribute-only checks, run even when inputs are unknown

    def problem(self, n: OnnxNode) -> Optional[str]:
        """Why this node cannot convert, judged from its attributes alone (None: looks fine)."""
        bad = sorted(set(n.attrs) - self.attrs)
        if bad:
            return f"unsupported attribute(s) {bad}"
        return self.check(n) if self.check else None


CONVERTERS: dict[str, Converter] = {}
FOLDERS: dict[str, FoldFn] = {}


def converter(*op_types: str, attrs: Sequence[str] = (), foldable: bool = True,
              check: Optional[CheckFn] = None):
    def deco(fn: ConvertFn) -> ConvertFn:
        for t in op_types:
            if t in CONVERTERS:
                raise ValueError(f"ONNX converter for {t!r} registered twice")
            CONVERTERS[t] = Converter(fn, frozenset(attrs), foldable, check)
        return fn
    return deco


def folder(*op_types: str):
    def deco(fn: FoldFn) -> FoldFn:
        for t in op_types:
            FOLDERS[t] = fn
        return fn
    return deco


def _x(ctx: ImportContext, n: OnnxNode, k: int = 0) -> Node:
    name = n.input(k)
    if name is None:
        raise Unsupported(f"input {k} is required")
    return ctx.node(name)


def _ints(v) -> list[int]:
    return [int(i) for i in np.asarray(v).reshape(-1)]


def _rank_check(x: Node, rank: int, what: str) -> None:
    if len(x.shape) != rank:
        raise Unsupported(f"{what}: only {rank}-D input is supported, got shape {x.shape}")


# -- elementwise ------------------------------------------------------------------------------
_UNARY = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Exp": "exp", "Log": "log",
          "Sqrt": "sqrt", "Abs": "abs", "Neg": "neg", "Reciprocal": "reciprocal", "Erf": "erf",
          "Floor": "floor", "Ceil": "ceil", "Softplus": "softplus", "HardSwish": "hardswish"}


def _unary_converter(op: str) -> ConvertFn:
    def fn(ctx: ImportContext, n: OnnxNode) -> list:
        return [ctx.emit(op, [_x(ctx, n)], n.outputs[0])]
    return fn


for _onnx, _op in _UNARY.items():
    converter(_onnx)(_unary_converter(_op))


@converter("LeakyRelu", attrs=["alpha"])
def _leaky(ctx, n):
    return [ctx.emit("leaky_relu", [_x(ctx, n)], n.outputs[0], alpha=float(n.attr("alpha", 0.01)))]


@converter("Elu", attrs=["alpha"])
def _elu(ctx, n):
    return [ctx.emit("elu", [_x(ctx, n)], n.outputs[0], alpha=float(n.attr("alpha", 1.0)))]


@converter("HardSigmoid", attrs=["alpha", "beta"])
def _hardsigmoid(ctx, n):
    return [ctx.emit("hardsigmoid", [_x(ctx, n)], n.outputs[0], alpha=float(n.attr("alpha", 0.2)),
                     beta=float(n.attr("beta", 0.5)))]


def _check_gelu(n: OnnxNode) -> Optional[str]:
    a = n.attr("approximate", "none")
    return None if a in ("none", "tanh") else f"approximate={a!r}"


@converter("Gelu", attrs=["approximate"], check=_check_gelu)
def _gelu(ctx, n):
    approx = n.attr("approximate", "none")
    return [ctx.emit("gelu", [_x(ctx, n)], n.outputs[0], approximate=approx)]


@converter("Clip", attrs=["min", "max"])
def _clip(ctx, n):
    x = _x(ctx, n)
    if n.opset < 11:
        return [ctx.emit("clip", [x], n.outputs[0], min=float(n.attr("min", -math.inf)),
                         max=float(n.attr("max", math.inf)))]
    lo, hi = n.input(1), n.input(2)
    if (lo is None or ctx.is_const(lo)) and (hi is None or ctx.is_const(hi)):
        bounds = {}
        if lo is not None:
            bounds["min"] = float(ctx.const(lo).reshape(()))
        if hi is not None:
            bounds["max"] = float(ctx.const(hi).reshape(()))
        return [ctx.emit("clip", [x], n.outputs[0], **bounds)]
    y = x  # run-time bounds: max(min(x, hi), lo)
    if hi is not None:
        y = ctx.emit("minimum", [y, ctx.node(hi)], None if lo else n.outputs[0])
    if lo is not None:
        y = ctx.emit("maximum", [y, ctx.node(lo)], n.outputs[0])
    return [y]


def _operand(ctx: ImportContext, name: str, dtype: str) -> Node:
    """A binary operand; constants are cast to the other side's dtype (ONNX Pow allows mixing)."""
    if ctx.is_const(name) and ctx.dtype(name) != dtype:
        return ctx.b.const(ctx.const(name).astype(dtype), dtype=dtype, name=ctx.fresh(name))
    return ctx.node(name)


def _main_dtype(ctx: ImportContext, names: Sequence[str]) -> str:
    for nm in names:
        if not ctx.is_const(nm):
            return ctx.dtype(nm)
    return ctx.dtype(names[0])


_BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Pow": "pow"}


def _binary_converter(op: str) -> ConvertFn:
    def fn(ctx: ImportContext, n: OnnxNode) -> list:
        a, b = n.input(0), n.input(1)
        if op == "pow":
            dt = ctx.dtype(a)
        else:
            dt = _main_dtype(ctx, [a, b])
        return [ctx.emit(op, [_operand(ctx, a, dt), _operand(ctx, b, dt)], n.outputs[0])]
    return fn


for _onnx, _op in _BINARY.items():
    converter(_onnx)(_binary_converter(_op))


def _variadic_converter(op: str) -> ConvertFn:
    def fn(ctx: ImportContext, n: OnnxNode) -> list:
        names = [i for i in n.inputs if i]
        dt = _main_dtype(ctx, names)
        xs = [_operand(ctx, i, dt) for i in names]
        if len(xs) == 1:
            return [xs[0]]
        if op == "add" and len(xs) > 2:
            return [ctx.emit("sum_n", xs, n.outputs[0])]
        acc = xs[0]
        for k, x in enumerate(xs[1:], start=2):
            acc = ctx.emit(op, [acc, x], n.outputs[0] if k == len(xs) else None)
        return [acc]
    return fn


converter("Sum")(_variadic_converter("add"))
converter("Max")(_variadic_converter("maximum"))
converter("Min")(_variadic_converter("minimum"))


@converter("Cast", attrs=["to", "saturate", "round_mode"])
def _cast(ctx, n):
    from onnx import helper
    dt = str(np.dtype(helper.tensor_dtype_to_np_dtype(int(n.attr("to")))))
    x = _x(ctx, n)
    if dt == x.dtype:
        return [x]
    return [ctx.emit("cast", [x], n.outputs[0], dtype=dt)]


# -- dense ----------------------------------------------------------------------------------
@converter("MatMul")
def _matmul(ctx, n):
    return [ctx.emit("matmul", [_x(ctx, n, 0), _x(ctx, n, 1)], n.outputs[0])]


@converter("Gemm", attrs=["alpha", "beta", "transA", "transB", "broadcast"])
def _gemm(ctx, n):
    alpha, beta = float(n.attr("alpha", 1.0)), float(n.attr("beta", 1.0))
    a = _x(ctx, n, 0)
    if n.attr("transA", 0):
        a = ctx.emit("transpose", [a], None, axes=(1, 0))
    bname = n.input(1)
    if n.attr("transB", 0):
        w = ctx.node(bname)  # already [N, K]: dense's weight layout
    elif ctx.is_const(bname):
        wt = np.ascontiguousarray(ctx.const(bname).T)
        w = ctx.b.const(wt, dtype=str(wt.dtype), name=ctx.fresh(f"{bname}.T"))
    else:
        w = ctx.emit("transpose", [ctx.node(bname)], None, axes=(1, 0))
    c = n.input(2)
    use_c = c is not None and beta != 0.0
    y = ctx.emit("dense", [a, w], None if (alpha != 1.0 or use_c) else n.outputs[0])
    if alpha != 1.0:
        y = ctx.emit("mul", [y, ctx.scalar(alpha, y.dtype)], None if use_c else n.outputs[0])
    if use_c:
        if ctx.is_const(c):
            cv = (ctx.const(c) * beta).astype(y.dtype) if beta != 1.0 else ctx.const(c)
            cn = ctx.b.const(cv, dtype=str(cv.dtype), name=ctx.fresh(c)) if beta != 1.0 else ctx.node(c)
        else:
            cn = ctx.node(c)
            if beta != 1.0:
                cn = ctx.emit("mul", [cn, ctx.scalar(beta, cn.dtype)])
        if len(cn.shape) == 1 and cn.shape[0] == y.shape[1]:
            y = ctx.emit("bias_add", [y, cn], n.outputs[0], axis=-1)
        else:
            y = ctx.emit("add", [y, cn], n.outputs[0])
    return [y]


# -- convolution and pooling ----------------------------------------------------------------
def _pads2d(n: OnnxNode, in_hw: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
            dilations: Sequence[int], ceil_mode: bool = False) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) from ONNX pads [t, l, b, r] or auto_pad."""
    auto = n.attr("auto_pad", "NOTSET")
    if auto in ("NOTSET", ""):
        p = _ints(n.attr("pads", [0, 0, 0, 0]))
        if len(p) != 4:
            raise Unsupported(f"pads {p}: expected 4 values for 2-D spatial dims")
        return (p[0], p[1], p[2], p[3])
    if auto == "VALID":
        return (0, 0, 0, 0)
    if auto not in ("SAME_UPPER", "SAME_LOWER"):
        raise Unsupported(f"auto_pad={auto!r}")
    begin, end = [], []
    for size, k, s, d in zip(in_hw, kernel, strides, dilations):
        out = -(-size // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        lo = total // 2 if auto == "SAME_UPPER" else total - total // 2
        begin.append(lo)
        end.append(total - lo)
    return (begin[0], begin[1], end[0], end[1])


def _spatial(n: OnnxNode, key: str, default: int) -> tuple[int, int]:
    v = _ints(n.attr(key, [default, default]))
    if len(v) != 2:
        raise Unsupported(f"{key}={v}: only 2-D spatial ops are supported")
    return (v[0], v[1])


def _check_2d(n: OnnxNode) -> Optional[str]:
    k = n.attr("kernel_shape")
    if k is not None and len(k) != 2:
        return f"kernel_shape {list(k)}: only 2-D spatial ops are supported"
    if n.attr("auto_pad", "NOTSET") not in ("NOTSET", "", "VALID", "SAME_UPPER", "SAME_LOWER"):
        return f"auto_pad={n.attr('auto_pad')!r}"
    return None


def _check_pool(n: OnnxNode) -> Optional[str]:
    if len([o for o in n.outputs if o]) > 1:
        return "the Indices output of MaxPool is not supported"
    if int(n.attr("storage_order", 0)) != 0:
        return "storage_order=1"
    if "kernel_shape" not in n.attrs:
        return "kernel_shape is required"
    return _check_2d(n)


@converter("Conv", attrs=["auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"], check=_check_2d)
def _conv(ctx, n):
    x, w = _x(ctx, n, 0), _x(ctx, n, 1)
    if len(x.shape) != 4:
        raise Unsupported(f"only 2-D convolution (4-D NCHW input) is supported, got input shape {x.shape}")
    kernel = tuple(_ints(n.attr("kernel_shape", w.shape[2:])))
    if kernel != tuple(w.shape[2:]):
        raise Unsupported(f"kernel_shape {kernel} differs from weight shape {w.shape}")
    strides, dil = _spatial(n, "strides", 1), _spatial(n, "dilations", 1)
    pad = _pads2d(n, x.shape[2:], kernel, strides, dil)
    bias = n.input(2)
    y = ctx.emit("conv2d", [x, w], None if bias else n.outputs[0], strides=strides, padding=pad,
                 dilation=dil, groups=int(n.attr("group", 1)))
    if bias:
        y = ctx.emit("bias_add", [y, ctx.node(bias)], n.outputs[0], axis=1)
    return [y]


def _pool(ctx: ImportContext, n: OnnxNode, op: str) -> list:
    x = _x(ctx, n)
    _rank_check(x, 4, n.op_type)
    kernel = _spatial(n, "kernel_shape", 1)
    strides, dil = _spatial(n, "strides", 1), _spatial(n, "dilations", 1)
    ceil = bool(n.attr("ceil_mode", 0))
    pad = _pads2d(n, x.shape[2:], kernel, strides, dil, ceil)
    attrs = dict(kernel=kernel, strides=strides, padding=pad, dilation=dil, ceil_mode=ceil)
    if op == "avg_pool2d":
        attrs["count_include_pad"] = bool(n.attr("count_include_pad", 0))
    return [ctx.emit(op, [x], n.outputs[0], **attrs)]


converter("MaxPool", attrs=["auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order",
                            "strides"], check=_check_pool)(lambda ctx, n: _pool(ctx, n, "max_pool2d"))
converter("AveragePool", attrs=["auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape",
                                "pads", "strides"], check=_check_pool)(lambda ctx, n: _pool(ctx, n, "avg_pool2d"))


def _global_converter(op: str) -> ConvertFn:
    def fn(ctx: ImportContext, n: OnnxNode) -> list:
        x = _x(ctx, n)
        _rank_check(x, 4, n.op_type)
        return [ctx.emit(op, [x], n.outputs[0])]
    return fn


converter("GlobalAveragePool")(_global_converter("global_avg_pool2d"))
converter("GlobalMaxPool")(_global_converter("global_max_pool2d"))


@converter("LRN", attrs=["alpha", "beta", "bias", "size"])
def _lrn(ctx, n):
    return [ctx.emit("lrn", [_x(ctx, n)], n.outputs[0], size=int(n.attr("size")),
                     alpha=float(n.attr("alpha", 1e-4)), beta=float(n.attr("beta", 0.75)),
                     bias=float(n.attr("bias", 1.0)), axis=1)]


def _check_bn(n: OnnxNode) -> Optional[str]:
    if int(n.attr("training_mode", 0)):
        return "training_mode=1 (only inference batch-norm is supported)"
    if int(n.attr("spatial", 1)) != 1:
        return "spatial=0"
    if len([o for o in n.outputs if o]) > 1:
        return "running mean/var outputs (training) are not supported"
    return None


@converter("BatchNormalization", attrs=["epsilon", "momentum", "training_mode", "spatial"], check=_check_bn)
def _bn(ctx, n):
    x = _x(ctx, n)
    dt = x.dtype
    params = [_operand(ctx, n.input(k), dt) for k in range(1, 5)]
    return [ctx.emit("batch_norm", [x, *params], n.outputs[0], axis=1,
                     epsilon=float(n.attr("epsilon", 1e-5)))]


# -- softmax --------------------------------------------------------------------------------
def _softmax_converter(op: str) -> ConvertFn:
    def fn(ctx: ImportContext, n: OnnxNode) -> list:
        x = _x(ctx, n)
        nd = len(x.shape)
        if n.opset >= 13:
            return [ctx.emit(op, [x], n.outputs[0], axis=int(n.attr("axis", -1)))]
        ax = int(n.attr("axis", 1))
        ax = ax + nd if ax < 0 else ax
        if ax == nd - 1:
            return [ctx.emit(op, [x], n.outputs[0], axis=-1)]
        # opset < 13: softmax over the input flattened to 2-D at `axis`
        flat = ctx.emit("flatten", [x], None, axis=ax)
        y = ctx.emit(op, [flat], None, axis=1)
        return [ctx.emit("reshape", [y], n.outputs[0], shape=x.shape)]
    return fn


converter("Softmax", attrs=["axis"])(_softmax_converter("softmax"))
converter("LogSoftmax", attrs=["axis"])(_softmax_converter("log_softmax"))


def _axis_attr(n: OnnxNode, nd: int, default: int) -> int:
    """The node's `axis` attribute as a non-negative axis of a rank-`nd` input."""
    raw = int(n.attr("axis", default))
    ax = raw + nd if raw < 0 else raw
    if not 0 <= ax < nd:
        raise Unsupported(f"axis {raw} is out of range for a rank-{nd} input")
    return ax


def _check_layer_norm(n: OnnxNode) -> Optional[str]:
    if len([o for o in n.outputs if o]) > 1:
        return "only output Y is supported (Mean / InvStdDev are training outputs)"
    return None


@converter("LayerNormalization", attrs=["axis", "epsilon", "stash_type"], check=_check_layer_norm)
def _layer_norm(ctx, n):
    """Decomposed into reductions and elementwise ops: mean, centred variance, scale and shift.

    Three kernels after fusion (two reductions and the normalising epilogue), statistics in
    float32 as stash_type=1 asks, whatever the input's dtype.
    """
    x = _x(ctx, n)
    nd = len(x.shape)
    axes = tuple(range(_axis_attr(n, nd, -1), nd))
    stash = "float32" if int(n.attr("stash_type", 1)) == 1 else x.dtype

    def xs() -> Node:
        # one cast (and below, one x - mean) per use: each copy fuses into its consumer's kernel,
        # where a shared node would be materialised as a kernel of its own
        return x if x.dtype == stash else ctx.emit("cast", [x], None, dtype=stash)

    mean = ctx.emit("reduce_mean", [xs()], None, axes=axes, keepdims=True)
    d = ctx.emit("sub", [xs(), mean])
    var = ctx.emit("reduce_mean", [ctx.emit("square", [d])], None, axes=axes, keepdims=True)
    eps = ctx.scalar(float(n.attr("epsilon", 1e-5)), stash)
    y = ctx.emit("mul", [ctx.emit("sub", [xs(), mean]), ctx.emit("rsqrt", [ctx.emit("add", [var, eps])])])
    if y.dtype != x.dtype:
        y = ctx.emit("cast", [y], None, dtype=x.dtype)
    has_bias = n.input(2) is not None
    y = ctx.emit("mul", [y, _operand(ctx, n.input(1), x.dtype)], None if has_bias else n.outputs[0])
    if has_bias:
        y = ctx.emit("add", [y, _operand(ctx, n.input(2), x.dtype)], n.outputs[0])
    return [y]


# -- layout ---------------------------------------------------------------------------------
@converter("Flatten", attrs=["axis"])
def _flatten(ctx, n):
    return [ctx.emit("flatten", [_x(ctx, n)], n.outputs[0], axis=int(n.attr("axis", 1)))]


@converter("Reshape", attrs=["shape", "allowzero"])
def _reshape(ctx, n):
    shape = _ints(n.attr("shape") if n.opset < 5 else ctx.const(n.input(1), "shape"))
    if int(n.attr("allowzero", 0)) and 0 in shape:
        raise Unsupported("allowzero=1 with a 0 in the target shape")
    return [ctx.emit("reshape", [_x(ctx, n)], n.outputs[0], shape=tuple(shape))]


@converter("Transpose", attrs=["perm"])
def _transpose(ctx, n):
    perm = n.attr("perm")
    return [ctx.emit("transpose", [_x(ctx, n)], n.outputs[0], axes=None if perm is None else tuple(_ints(perm)))]


@converter("Concat", attrs=["axis"])
def _concat(ctx, n):
    names = [i for i in n.inputs if i]
    dt = _main_dtype(ctx, names)
    return [ctx.emit("concat", [_operand(ctx, i, dt) for i in names], n.outputs[0], axis=int(n.attr("axis")))]


def _axes_arg(ctx: ImportContext, n: OnnxNode, input_from: int, k: int = 1) -> Optional[list[int]]:
    """Axes given as an attribute before opset `input_from`, as an optional input from it on."""
    if n.opset < input_from:
        v = n.attr("axes")
    else:
        nm = n.input(k)
        v = None if nm is None else ctx.const(nm, "axes")
    return None if v is None else _ints(v)


@converter("Squeeze", attrs=["axes"])
def _squeeze(ctx, n):
    axes = _axes_arg(ctx, n, 13)
    return [ctx.emit("squeeze", [_x(ctx, n)], n.outputs[0], axes=None if axes is None else tuple(axes))]


@converter("Unsqueeze", attrs=["axes"])
def _unsqueeze(ctx, n):
    axes = _axes_arg(ctx, n, 13)
    if axes is None:
        raise Unsupported("axes are required")
    return [ctx.emit("expand_dims", [_x(ctx, n)], n.outputs[0], axes=tuple(axes))]


def _check_pad(n: OnnxNode) -> Optional[str]:
    mode = n.attr("mode", "constant")
    return None if mode == "constant" else f"mode={mode!r} (only constant padding)"


@converter("Pad", attrs=["mode", "pads", "value"], check=_check_pad)
def _pad(ctx, n):
    x = _x(ctx, n)
    nd = len(x.shape)
    if n.opset < 11:
        pads, value = _ints(n.attr("pads")), float(n.attr("value", 0.0))
    else:
        pads = _ints(ctx.const(n.input(1), "pads"))
        cv = n.input(2)
        value = float(ctx.const(cv, "constant_value").reshape(())) if cv else 0.0
        axes_name = n.input(3)
        if axes_name:
            axes = [a + nd if a < 0 else a for a in _ints(ctx.const(axes_name, "axes"))]
            full = [0] * (2 * nd)
            for j, a in enumerate(axes):
                full[a], full[nd + a] = pads[j], pads[len(axes) + j]
            pads = full
    if any(p < 0 for p in pads):
        raise Unsupported(f"negative pads {pads}")
    if not any(pads):
        return [x]
    return [ctx.emit("pad", [x], n.outputs[0], pads=tuple(pads), value=value)]


@converter("Slice", attrs=["starts", "ends", "axes"])
def _slice(ctx, n):
    x = _x(ctx, n)
    if n.opset < 10:
        starts, ends = _ints(n.attr("starts")), _ints(n.attr("ends"))
        axes = n.attr("axes")
        steps = None
    else:
        starts, ends = _ints(ctx.const(n.input(1), "starts")), _ints(ctx.const(n.input(2), "ends"))
        axes = ctx.const(n.input(3), "axes") if n.input(3) else None
        steps = _ints(ctx.const(n.input(4), "steps")) if n.input(4) else None
    axes = None if axes is None else tuple(_ints(axes))
    return [ctx.emit("slice", [x], n.outputs[0], starts=tuple(starts), ends=tuple(ends), axes=axes,
                     steps=None if steps is None else tuple(steps))]


@converter("Split", attrs=["axis", "split", "num_outputs"])
def _split(ctx, n):
    """Slices along `axis`: sizes from the `split` input (opset 13+) or attribute, else equal parts
    (the last smaller when `num_outputs` does not divide the axis, as opset 18 says)."""
    x = _x(ctx, n)
    ax = _axis_attr(n, len(x.shape), 0)
    dim, outs = x.shape[ax], list(n.outputs)
    if n.input(1):
        sizes = _ints(ctx.const(n.input(1), "split"))
    elif n.attr("split") is not None:
        sizes = _ints(n.attr("split"))
    else:
        parts = int(n.attr("num_outputs", len(outs)))
        step = -(-dim // parts)
        sizes = [min(step, dim - k * step) for k in range(parts)]
    if len(sizes) != len(outs) or sum(sizes) != dim or min(sizes) < 0:
        raise Unsupported(f"split sizes {sizes} do not cut axis {ax} of size {dim} into {len(outs)} outputs")
    res, start = [], 0
    for size, out in zip(sizes, outs):
        res.append(ctx.emit("slice", [x], out or None, starts=(start,), ends=(start + size,), axes=(ax,)))
        start += size
    return res


@converter("Gather", attrs=["axis"])
def _gather(ctx, n):
    """Run-time data gathered at constant indices: slices along `axis`."""
    x = _x(ctx, n)
    idx = ctx.const(n.input(1), "indices")
    ax = int(n.attr("axis", 0))
    ax = ax + len(x.shape) if ax < 0 else ax
    dim = x.shape[ax]
    flat = [int(i) + dim if int(i) < 0 else int(i) for i in idx.reshape(-1)]
    parts = [ctx.emit("slice", [x], None, starts=(i,), ends=(i + 1,), axes=(ax,)) for i in flat]
    y = parts[0] if len(parts) == 1 else ctx.emit("concat", parts, None, axis=ax)
    shape = x.shape[:ax] + tuple(idx.shape) + x.shape[ax + 1:]
    return [ctx.emit("reshape", [y], n.outputs[0], shape=shape)]


@converter("Shape", attrs=["start", "end"])
def _shape(ctx, n):
    shape = ctx.shape(n.inputs[0])
    start, end = n.attr("start", 0), n.attr("end", None)
    return [np.asarray(shape[start:end], dtype=np.int64)]


folder("Shape")(lambda ctx, n: _shape(ctx, n))


@converter("Size")
def _size(ctx, n):
    return [np.asarray(int(np.prod(ctx.shape(n.inputs[0]))), dtype=np.int64)]


# -- identity-like and constants -------------------------------------------------------------
def _alias(ctx: ImportContext, n: OnnxNode) -> list:
    v = ctx.env[n.inputs[0]]
    return [v]


converter("Identity")(_alias)


@converter("Dropout", attrs=["ratio", "seed"])
def _dropout(ctx, n):
    if n.opset >= 12 and n.input(2):
        if not ctx.is_const(n.input(2)) or bool(ctx.const(n.input(2)).reshape(())):
            raise Unsupported("training_mode must be a constant false (inference)")
    x = ctx.env[n.inputs[0]]
    outs: list[Value] = [x]
    if len(n.outputs) > 1 and n.outputs[1]:
        outs.append(np.ones(x.shape, dtype=bool))  # inference mask: everything kept
    return outs


@folder("Dropout")
def _fold_dropout(ctx, n):
    x = ctx.env[n.inputs[0]]
    return [x, np.ones(x.shape, dtype=bool)][:len(n.outputs)]


@converter("Constant", attrs=["value", "value_float", "value_floats", "value_int", "value_ints",
                              "sparse_value", "value_string", "value_strings"])
def _constant(ctx, n):  # only reached if folding failed; folding handles every supported form
    raise Unsupported(f"attribute(s) {sorted(n.attrs)} cannot be folded")


@folder("Constant")
def _fold_constant(ctx, n):
    a = n.attrs
    if "value" in a:
        return [np.asarray(a["value"])]
    if "value_float" in a:
        return [np.asarray(a["value_float"], dtype=np.float32)]
    if "value_floats" in a:
        return [np.asarray(a["value_floats"], dtype=np.float32)]
    if "value_int" in a:
        return [np.asarray(a["value_int"], dtype=np.int64)]
    if "value_ints" in a:
        return [np.asarray(a["value_ints"], dtype=np.int64)]
    raise Unsupported(f"Constant with attribute(s) {sorted(a)}")


@converter("ConstantOfShape", attrs=["value"])
def _cos(ctx, n):
    ctx.const(n.input(0), "shape")  # raises Unsupported: the shape is computed at run time
    return _fold_cos(ctx, n)


@folder("ConstantOfShape")
def _fold_cos(ctx, n):
    shape = _ints(ctx.const(n.input(0), "shape"))
    v = n.attr("value")
    v = np.zeros((1,), np.float32) if v is None else np.asarray(v)
    return [np.full(shape, v.reshape(-1)[0], dtype=v.dtype)]


@folder("Unsqueeze")
def _fold_unsqueeze(ctx, n):
    x = ctx.const(n.input(0))
    axes = _axes_arg(ctx, n, 13)
    nd = x.ndim + len(axes)
    for a in sorted(a + nd if a < 0 else a for a in axes):
        x = np.expand_dims(x, a)
    return [x]


@folder("Identity")
def _fold_identity(ctx, n):
    return [ctx.const(n.input(0))]


# -- reductions ------------------------------------------------------------------------------
def _reduce_converter(op: str, axes_input_from: int) -> ConvertFn:
    def fn(ctx: ImportContext, n: OnnxNode) -> list:
        axes = _axes_arg(ctx, n, axes_input_from)
        x = _x(ctx, n)
        if not axes:
            if int(n.attr("noop_with_empty_axes", 0)):
                return [x]
            axes = None
        return [ctx.emit(op, [x], n.outputs[0], axes=None if axes is None else tuple(axes),
                         keepdims=bool(n.attr("keepdims", 1)))]
    return fn


converter("ReduceMean", attrs=["axes", "keepdims", "noop_with_empty_axes"])(_reduce_converter("reduce_mean", 18))
converter("ReduceMax", attrs=["axes", "keepdims", "noop_with_empty_axes"])(_reduce_converter("reduce_max", 18))
converter("ReduceMin", attrs=["axes", "keepdims", "noop_with_empty_axes"])(_reduce_converter("reduce_min", 18))
converter("ReduceSum", attrs=["axes", "keepdims", "noop_with_empty_axes"])(_reduce_converter("reduce_sum", 13))


def supported_ops() -> list[str]:
    """ONNX op types with a converter (others import only when constant-folded)."""
    return sorted(CONVERTERS)
