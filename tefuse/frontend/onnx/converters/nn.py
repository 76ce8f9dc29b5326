"""Neural-network ONNX ops: MatMul and Gemm, convolution and pools, LRN, batch- and
layer-normalization, the softmax family."""
from __future__ import annotations

from dataclasses import replace
from typing import Optional, Sequence

import numpy as np

from ....graph.ir import Node
from ..context import ImportContext, OnnxNode, Unsupported
from ..registry import ConvertFn, converter
from .common import axis_attr, int_list, binary_operand, rank_check, input_node


# -- dense ----------------------------------------------------------------------------------
@converter("MatMul")
def _matmul(ctx, n):
    return [ctx.emit("matmul", [input_node(ctx, n, 0), input_node(ctx, n, 1)], n.outputs[0])]


@converter("Gemm", attrs=["alpha", "beta", "transA", "transB", "broadcast"])
def _gemm(ctx, n):
    alpha, beta = float(n.attr("alpha", 1.0)), float(n.attr("beta", 1.0))
    a = input_node(ctx, n, 0)
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
        p = int_list(n.attr("pads", [0, 0, 0, 0]))
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
    v = int_list(n.attr(key, [default, default]))
    if len(v) != 2:
        raise Unsupported(f"{key}={v}: only 2-D spatial ops are supported")
    return (v[0], v[1])


def _check_2d(n: OnnxNode) -> Optional[str]:
    k = n.attr("kernel_shape")
    if k is not None and len(k) not in (1, 2):
        return f"kernel_shape {list(k)}: only 1-D and 2-D spatial ops are supported"
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


def _as_2d(n: OnnxNode) -> OnnxNode:
    """A 1-D spatial node's attributes for the same op on [N, C, 1, L]: a unit leading dim."""
    a = dict(n.attrs)
    for key, unit in (("kernel_shape", 1), ("strides", 1), ("dilations", 1)):
        if key in a:
            a[key] = [unit, *int_list(a[key])]
    if "pads" in a:
        p = int_list(a["pads"])
        a["pads"] = [0, p[0], 0, p[1]]
    return replace(n, attrs=a)


def _one_d(ctx: ImportContext, n: OnnxNode, convert2d, weight: bool = False) -> list:
    """A 1-D conv or pool, as the 2-D one over [N, C, 1, L] (and an [K, C/g, 1, k] weight)."""
    x = ctx.emit("expand_dims", [input_node(ctx, n, 0)], None, axes=(2,))
    ins = [x]
    if weight:
        wname = n.input(1)
        if ctx.is_const(wname):
            wv = ctx.const(wname)[:, :, None, :]
            ins.append(ctx.b.const(wv, dtype=str(wv.dtype), name=ctx.fresh(wname)))
        else:
            ins.append(ctx.emit("expand_dims", [ctx.node(wname)], None, axes=(2,)))
        if n.input(2):
            ins.append(ctx.node(n.input(2)))
    n2 = _as_2d(n)
    y = convert2d(ctx, n2, ins, None)[0]
    return [ctx.emit("squeeze", [y], n.outputs[0], axes=(2,))]


@converter("Conv", attrs=["auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"], check=_check_2d)
def _conv(ctx, n):
    if len(input_node(ctx, n, 0).shape) == 3:
        return _one_d(ctx, n, lambda c, m, ins, out: _conv2d(c, m, ins, out), weight=True)
    return _conv2d(ctx, n, [input_node(ctx, n, 0), input_node(ctx, n, 1)] + ([ctx.node(n.input(2))] if n.input(2) else []),
                   n.outputs[0])


def conv2d_attrs(n: OnnxNode, x_shape: Sequence[int], w_shape: Sequence[int]) -> dict:
    """conv2d's attrs from an ONNX Conv-like node (Conv, ConvInteger, QLinearConv)."""
    if len(x_shape) != 4:
        raise Unsupported(f"only 2-D convolution (4-D NCHW input) is supported, got input shape {tuple(x_shape)}")
    kernel = tuple(int_list(n.attr("kernel_shape", w_shape[2:])))
    if kernel != tuple(w_shape[2:]):
        raise Unsupported(f"kernel_shape {kernel} differs from weight shape {tuple(w_shape)}")
    strides, dil = _spatial(n, "strides", 1), _spatial(n, "dilations", 1)
    return dict(strides=strides, padding=_pads2d(n, x_shape[2:], kernel, strides, dil), dilation=dil,
                groups=int(n.attr("group", 1)))


def _conv2d(ctx, n, ins, out):
    x, w = ins[0], ins[1]
    bias = ins[2] if len(ins) > 2 else None
    y = ctx.emit("conv2d", [x, w], None if bias is not None else out, **conv2d_attrs(n, x.shape, w.shape))
    if bias is not None:
        y = ctx.emit("bias_add", [y, bias], out, axis=1)
    return [y]


def _pool(ctx: ImportContext, n: OnnxNode, op: str) -> list:
    if len(input_node(ctx, n).shape) == 3:
        return _one_d(ctx, n, lambda c, m, ins, out: _pool2d(c, m, op, ins[0], out))
    return _pool2d(ctx, n, op, input_node(ctx, n), n.outputs[0])


def _pool2d(ctx: ImportContext, n: OnnxNode, op: str, x, out) -> list:
    rank_check(x, 4, n.op_type)
    kernel = _spatial(n, "kernel_shape", 1)
    strides, dil = _spatial(n, "strides", 1), _spatial(n, "dilations", 1)
    ceil = bool(n.attr("ceil_mode", 0))
    pad = _pads2d(n, x.shape[2:], kernel, strides, dil, ceil)
    attrs = dict(kernel=kernel, strides=strides, padding=pad, dilation=dil, ceil_mode=ceil)
    if op == "avg_pool2d":
        attrs["count_include_pad"] = bool(n.attr("count_include_pad", 0))
    return [ctx.emit(op, [x], out, **attrs)]


converter("MaxPool", attrs=["auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order",
                            "strides"], check=_check_pool)(lambda ctx, n: _pool(ctx, n, "max_pool2d"))
converter("AveragePool", attrs=["auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape",
                                "pads", "strides"], check=_check_pool)(lambda ctx, n: _pool(ctx, n, "avg_pool2d"))


def _global_converter(op: str) -> ConvertFn:
    def fn(ctx: ImportContext, n: OnnxNode) -> list:
        x = input_node(ctx, n)
        rank_check(x, 4, n.op_type)
        return [ctx.emit(op, [x], n.outputs[0])]
    return fn


converter("GlobalAveragePool")(_global_converter("global_avg_pool2d"))
converter("GlobalMaxPool")(_global_converter("global_max_pool2d"))


@converter("LRN", attrs=["alpha", "beta", "bias", "size"])
def _lrn(ctx, n):
    return [ctx.emit("lrn", [input_node(ctx, n)], n.outputs[0], size=int(n.attr("size")),
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
    x = input_node(ctx, n)
    dt = x.dtype
    params = [binary_operand(ctx, n.input(k), dt) for k in range(1, 5)]
    return [ctx.emit("batch_norm", [x, *params], n.outputs[0], axis=1,
                     epsilon=float(n.attr("epsilon", 1e-5)))]


# -- softmax --------------------------------------------------------------------------------
def _softmax_converter(op: str) -> ConvertFn:
    def fn(ctx: ImportContext, n: OnnxNode) -> list:
        x = input_node(ctx, n)
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


@converter("LayerNormalization", attrs=["axis", "epsilon", "stash_type"])
def _layer_norm(ctx, n):
    """One `layer_norm` op (one row-wise kernel, statistics in float32) where the normalisation
    runs over the last axis alone with a per-element scale and bias and only Y is used: a
    transformer's LayerNorm. Otherwise decomposed into reductions and elementwise ops (mean,
    centred variance, scale and shift: three kernels after fusion), statistics in float32 as
    stash_type=1 asks, whatever the input's dtype; the optional Mean and InvStdDev outputs are
    those statistics (keepdims shape, stash dtype).
    """
    x = input_node(ctx, n)
    nd = len(x.shape)
    axes = tuple(range(axis_attr(n, nd, -1), nd))
    stash = "float32" if int(n.attr("stash_type", 1)) == 1 else x.dtype
    fused = _fused_layer_norm(ctx, n, x, axes, stash)
    if fused is not None:
        return [fused]

    def xs() -> Node:
        # one cast (and below, one x - mean) per use: each copy fuses into its consumer's kernel,
        # where a shared node would be materialised as a kernel of its own
        return x if x.dtype == stash else ctx.emit("cast", [x], None, dtype=stash)

    out = lambda k: n.outputs[k] if k < len(n.outputs) and n.outputs[k] else None  # noqa: E731
    mean = ctx.emit("reduce_mean", [xs()], out(1), axes=axes, keepdims=True)
    d = ctx.emit("sub", [xs(), mean])
    var = ctx.emit("reduce_mean", [ctx.emit("square", [d])], None, axes=axes, keepdims=True)
    eps = ctx.scalar(float(n.attr("epsilon", 1e-5)), stash)
    inv_std = ctx.emit("rsqrt", [ctx.emit("add", [var, eps])], out(2))
    y = ctx.emit("mul", [ctx.emit("sub", [xs(), mean]), inv_std])
    if y.dtype != x.dtype:
        y = ctx.emit("cast", [y], None, dtype=x.dtype)
    has_bias = n.input(2) is not None
    y = ctx.emit("mul", [y, binary_operand(ctx, n.input(1), x.dtype)], None if has_bias else n.outputs[0])
    if has_bias:
        y = ctx.emit("add", [y, binary_operand(ctx, n.input(2), x.dtype)], n.outputs[0])
    return [y, mean, inv_std]


def _fused_layer_norm(ctx, n, x: Node, axes: tuple, stash: str) -> Optional[Node]:
    """The `layer_norm` node for a LayerNormalization it computes exactly, else None."""
    wants_stats = any(k < len(n.outputs) and n.outputs[k] for k in (1, 2))
    if wants_stats or len(axes) != 1 or stash != "float32" or x.dtype not in ("float32", "float16", "bfloat16"):
        return None
    d = x.shape[-1]
    if any(k is not None and ctx.shape(k) != (d,) for k in (n.input(1), n.input(2))):
        return None
    scale = binary_operand(ctx, n.input(1), x.dtype)
    if n.input(2) is not None:
        bias = binary_operand(ctx, n.input(2), x.dtype)
    else:
        bias = ctx.b.const(np.zeros((d,), x.dtype), dtype=x.dtype, name=ctx.fresh(f"{n.outputs[0]}_bias"))
    return ctx.emit("layer_norm", [x, scale, bias], n.outputs[0], axis=len(x.shape) - 1,
                    epsilon=float(n.attr("epsilon", 1e-5)))
