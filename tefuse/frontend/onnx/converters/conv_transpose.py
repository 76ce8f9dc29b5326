"""ConvTranspose (1-D and 2-D) as a conv2d over the zero-inserted input: tefuse/ops/conv_transpose.py
says why, and what it costs. This module turns ONNX's attributes into that conv: the output
size and the pads (explicit, from auto_pad, or from output_shape), then the equivalent conv's
padding (d * (k - 1) - pad per side; a negative one crops) and its weight (channels swapped per
group, taps flipped: at import for a constant weight, a lazy view for a run-time one)."""
from __future__ import annotations

from typing import Optional

import numpy as np

from ....graph.ir import Node
from ..context import ImportContext, OnnxNode, Unsupported
from ..registry import converter
from .common import input_node, int_list

_AUTO_PADS = ("NOTSET", "", "VALID", "SAME_UPPER", "SAME_LOWER")


def _check(n: OnnxNode) -> Optional[str]:
    k = n.attr("kernel_shape")
    if k is not None and len(k) not in (1, 2):
        return f"kernel_shape {list(k)}: only 1-D and 2-D transposed convolutions are supported"
    if n.attr("auto_pad", "NOTSET") not in _AUTO_PADS:
        return f"auto_pad={n.attr('auto_pad')!r}"
    return None


def _per_axis(n: OnnxNode, key: str, nd: int, default: int) -> list[int]:
    v = int_list(n.attr(key, [default] * nd))
    if len(v) != nd:
        raise Unsupported(f"{key}={v}: expected {nd} values for {nd}-D spatial dims")
    return v


def _pads(n: OnnxNode, in_sizes, kernel, strides, dilations, out_pad) -> tuple[list[int], list[int]]:
    """ONNX's (begin pads, end pads): from output_shape when given (the spec's rule: the odd
    unit at the end for SAME_UPPER, at the start otherwise), from auto_pad, else the attribute."""
    nd = len(in_sizes)
    natural = [s * (i - 1) + op + (k - 1) * d + 1
               for i, k, s, d, op in zip(in_sizes, kernel, strides, dilations, out_pad)]
    auto = n.attr("auto_pad", "NOTSET")
    wanted = n.attr("output_shape")
    if wanted is not None:
        wanted = int_list(wanted)[-nd:]  # (some exporters give N and C too)
        if len(wanted) != nd:
            raise Unsupported(f"output_shape {int_list(n.attr('output_shape'))}: expected {nd} spatial sizes")
    elif auto in ("SAME_UPPER", "SAME_LOWER"):
        wanted = [i * s for i, s in zip(in_sizes, strides)]
    if wanted is not None:
        total = [a - b for a, b in zip(natural, wanted)]
        head = [t // 2 if auto == "SAME_UPPER" else t - t // 2 for t in total]
        return head, [t - h for t, h in zip(total, head)]
    if auto == "VALID":
        return [0] * nd, [0] * nd
    p = _per_axis(n, "pads", 2 * nd, 0)
    return p[:nd], p[nd:]


def _weight(ctx: ImportContext, name: str, groups: int, one_d: bool) -> Node:
    """The equivalent conv2d's OIHW weight."""
    if ctx.is_const(name):
        w = ctx.const(name)
        w = w[:, :, None, :] if one_d else w
        c, mg, kernel = w.shape[0], w.shape[1], w.shape[2:]
        wc = w.reshape(groups, c // groups, mg, *kernel).swapaxes(1, 2).reshape(groups * mg, c // groups, *kernel)
        wc = np.ascontiguousarray(wc[..., ::-1, ::-1])
        return ctx.b.const(wc, dtype=str(wc.dtype), name=ctx.fresh(f"{name}.conv"))
    w = ctx.node(name)
    if one_d:
        w = ctx.emit("expand_dims", [w], None, axes=(2,))
    return ctx.emit("conv_transpose_weight", [w], None, groups=groups)


@converter("ConvTranspose", attrs=["auto_pad", "dilations", "group", "kernel_shape", "output_padding",
                                   "output_shape", "pads", "strides"], check=_check)
def _conv_transpose(ctx, n):
    x = input_node(ctx, n, 0)
    nd = len(x.shape) - 2
    if nd not in (1, 2):
        raise Unsupported(f"input shape {x.shape}: only 1-D and 2-D transposed convolutions are supported")
    wshape = ctx.shape(n.input(1))
    g = int(n.attr("group", 1))
    c = x.shape[1]
    if len(wshape) != nd + 2 or wshape[0] != c or g < 1 or c % g:
        raise Unsupported(f"weight shape {tuple(wshape)} with group={g} does not fit input shape {x.shape} "
                          f"(expected [{c}, M/group, *kernel], group dividing {c})")
    kernel = list(wshape[2:])
    if n.attr("kernel_shape") is not None and int_list(n.attr("kernel_shape")) != kernel:
        raise Unsupported(f"kernel_shape {int_list(n.attr('kernel_shape'))} differs from the weight's {kernel}")
    strides, dil = _per_axis(n, "strides", nd, 1), _per_axis(n, "dilations", nd, 1)
    out_pad = _per_axis(n, "output_padding", nd, 0)
    if min(strides + dil) < 1 or min(out_pad) < 0:
        raise Unsupported(f"strides {strides} and dilations {dil} must be >= 1, output_padding {out_pad} >= 0")
    begin, end = _pads(n, x.shape[2:], kernel, strides, dil, out_pad)
    # the equivalent stride-1 conv's padding of the zero-inserted input, per side
    lo = [d * (k - 1) - b for d, k, b in zip(dil, kernel, begin)]
    hi = [d * (k - 1) - e + op for d, k, e, op in zip(dil, kernel, end, out_pad)]
    out = [(i - 1) * s + 1 + a + b - d * (k - 1) for i, s, a, b, d, k in zip(x.shape[2:], strides, lo, hi, dil, kernel)]
    if min(out) < 1:
        raise Unsupported(f"pads {begin + end} leave an output of size {out}")
    one_d = nd == 1
    if one_d:  # as 2-D over [N, C, 1, L]
        x = ctx.emit("expand_dims", [x], None, axes=(2,))
        strides, dil, lo, hi = [1] + strides, [1] + dil, [0] + lo, [0] + hi
    if strides != [1, 1] or min(lo + hi) < 0:
        crop = [min(v, 0) for v in lo], [min(v, 0) for v in hi]
        x = ctx.emit("insert_zeros", [x], None, strides=(1, 1, *strides), pads=(0, 0, *crop[0], 0, 0, *crop[1]))
    padding = (max(lo[0], 0), max(lo[1], 0), max(hi[0], 0), max(hi[1], 0))
    bias = n.input(2)
    last = None if (bias or one_d) else n.outputs[0]
    y = ctx.emit("conv2d", [x, _weight(ctx, n.input(1), g, one_d)], last, strides=1, padding=padding,
                 dilation=tuple(dil), groups=g)
    if bias:
        y = ctx.emit("bias_add", [y, ctx.node(bias)], None if one_d else n.outputs[0], axis=1)
    if one_d:
        y = ctx.emit("squeeze", [y], n.outputs[0], axes=(2,))
    return [y]
