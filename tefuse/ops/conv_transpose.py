"""The two views that turn a transposed convolution into an ordinary conv2d.

conv_transpose(x, W, stride s, pads p, dilation d) equals a stride-1 conv2d, dilation d, over x
with s - 1 zeros inserted between neighbouring pixels and padded by d * (k - 1) - p on each
side (a negative amount crops), whose weight is W with its input and output channels swapped
per group and its taps flipped. `insert_zeros` is that input and `conv_transpose_weight` that
weight: both are lazy, injective views, so fusion computes them inside the conv2d kernel's
operand loads (the zeros never reach memory) and every conv2d template, tensor cores included,
runs a ConvTranspose as it runs a Conv.

The cost: of the s_h * s_w taps the conv multiplies, only one in s_h * s_w meets a real pixel,
so the GEMM does s_h * s_w times the useful multiply-adds (4x for the usual 2x2 upsampling).
Splitting it into s_h * s_w phase convolutions (sub-pixel convolution), or a direct kernel
that visits only the taps landing on pixels, would do the useful work alone, but needs a
kernel per phase writing interleaved outputs, or a template of its own. Reusing the tuned
conv templates wins where the layer is small next to the network (decoders, detection
heads) and loses on upsampling-heavy models; stride 1 wastes nothing.
"""
from __future__ import annotations

from typing import Sequence

from tvm import tirx as tir

from ..errors import OpError
from .registry import OpPattern, register_op
from .value import Value, lazy


@register_op("insert_zeros", OpPattern.INJECTIVE, num_inputs=1, attrs={"strides": (), "pads": ()})
def insert_zeros(inputs: Sequence[Value], attrs: dict) -> Value:
    """x with strides[a] - 1 zeros between neighbouring elements along each axis a (so an axis
    of n becomes (n - 1) * strides[a] + 1), then padded by `pads` (ONNX-style, begins then
    ends; a negative pad crops). Reads only x's real elements: everywhere else is 0."""
    (x,) = inputs
    s, p = [int(v) for v in attrs["strides"]], [int(v) for v in attrs["pads"]]
    if len(s) != x.ndim or min(s, default=1) < 1:
        raise OpError(f"insert_zeros: strides must hold rank={x.ndim} positive ints, got {s}")
    if len(p) != 2 * x.ndim:
        raise OpError(f"insert_zeros: pads must hold 2*rank={2 * x.ndim} ints, got {p}")
    begin, end = p[:x.ndim], p[x.ndim:]
    shape = tuple((n - 1) * st + 1 + b + e for n, st, b, e in zip(x.shape, s, begin, end))
    if min(shape, default=1) < 1:
        raise OpError(f"insert_zeros: pads {p} crop all of shape {x.shape} with holes {s}")
    zero = tir.const(0, x.dtype)

    def fn(*i):
        conds, src = [], []
        for k in range(x.ndim):
            j = i[k] - begin[k]  # the position in the holed, unpadded axis
            if s[k] == 1 and begin[k] <= 0 and end[k] <= 0:
                src.append(j)  # cropped, no holes: always a real element
                continue
            conds.append(tir.all(j >= 0, j < (x.shape[k] - 1) * s[k] + 1))
            if s[k] > 1:
                conds.append(tir.floormod(j, s[k]) == 0)
                j = tir.floordiv(j, s[k])
            src.append(j)
        if not conds:
            return x(*src)
        return tir.if_then_else(tir.all(*conds), x(*src), zero)  # (the load is made only where true)

    return lazy(shape, x.dtype, fn)


@register_op("conv_transpose_weight", OpPattern.INJECTIVE, num_inputs=1, attrs={"groups": 1})
def conv_transpose_weight(inputs: Sequence[Value], attrs: dict) -> Value:
    """A ConvTranspose weight [C, M/groups, *k] as the conv2d weight [M, C/groups, *k] that
    computes it: input and output channels swapped within each group, every tap flipped."""
    (w,) = inputs
    g = attrs["groups"]
    if w.ndim < 3:
        raise OpError(f"conv_transpose_weight: expects [C, M/groups, *kernel], got shape {w.shape}")
    c, mg, kernel = w.shape[0], w.shape[1], w.shape[2:]
    if not isinstance(g, int) or g < 1 or c % g:
        raise OpError(f"conv_transpose_weight: groups={g!r} must be a positive integer dividing its {c} input channels")
    cg = c // g

    def fn(o, ci, *taps):
        grp, m = (0, o) if g == 1 else (tir.floordiv(o, mg), tir.floormod(o, mg))
        return w(grp * cg + ci, m, *[kk - 1 - t for kk, t in zip(kernel, taps)])

    return lazy((mg * g, cg, *kernel), w.dtype, fn)
