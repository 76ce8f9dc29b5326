"""bias_add, inference batch-norm and its folded form scale_shift: broadcast ops that form conv epilogues."""
from __future__ import annotations

from typing import Sequence

from tvm import tirx as tir

from ..errors import OpError
from .registry import OpPattern, register_op
from .value import Value, acc_dtype, lazy


def _channel_axis(x: Value, axis: int, name: str) -> int:
    ax = axis if axis >= 0 else axis + x.ndim
    if not 0 <= ax < x.ndim:
        raise OpError(f"{name}: axis {axis} out of range for rank {x.ndim}")
    return ax


def _check_vec(name: str, what: str, v: Value, n: int, dtype: str, of: str = "data dtype") -> None:
    if v.shape != (n,):
        raise OpError(f"{name}: {what} must have shape ({n},), got {v.shape}")
    if v.dtype != dtype:
        raise OpError(f"{name}: {what} dtype {v.dtype} differs from {of} {dtype}")


@register_op("bias_add", OpPattern.BROADCAST, num_inputs=2, attrs={"axis": 1})
def bias_add(inputs: Sequence[Value], attrs: dict) -> Value:
    """Add a per-channel bias along `axis` (1 for NCHW, -1 for NHWC)."""
    x, b = inputs
    ax = _channel_axis(x, attrs["axis"], "bias_add")
    _check_vec("bias_add", "bias", b, x.shape[ax], x.dtype)
    return lazy(x.shape, x.dtype, lambda *i: x(*i) + b(i[ax]))


@register_op("batch_norm", OpPattern.BROADCAST, num_inputs=5, attrs={"axis": 1, "epsilon": 1e-5})
def batch_norm(inputs: Sequence[Value], attrs: dict) -> Value:
    """Inference batch-norm: (x - mean) / sqrt(var + eps) * gamma + beta per channel."""
    x, gamma, beta, mean, var = inputs
    ax = _channel_axis(x, attrs["axis"], "batch_norm")
    c = x.shape[ax]
    for what, v in (("gamma", gamma), ("beta", beta), ("mean", mean), ("var", var)):
        _check_vec("batch_norm", what, v, c, x.dtype)
    eps = attrs["epsilon"]
    if eps < 0:
        raise OpError(f"batch_norm: epsilon must be >= 0, got {eps}")

    def fn(*i):
        ch = i[ax]
        acc = acc_dtype(x.dtype)
        f = lambda e: tir.Cast(acc, e) if acc != x.dtype else e  # noqa: E731
        # a division, not rsqrt: TVM's vectorizer has no vector rsqrt and would scalarize the
        # whole fused store (tensor-core epilogues: one 2-byte store and five loads an element)
        scale = f(gamma(ch)) / tir.sqrt(f(var(ch)) + tir.const(eps, acc))
        out = (f(x(*i)) - f(mean(ch))) * scale + f(beta(ch))
        return tir.Cast(x.dtype, out) if acc != x.dtype else out

    return lazy(x.shape, x.dtype, fn)


@register_op("scale_shift", OpPattern.BROADCAST, num_inputs=3, attrs={"axis": 1})
def scale_shift(inputs: Sequence[Value], attrs: dict) -> Value:
    """x * scale + shift per channel along `axis`: an inference batch-norm whose statistics are
    constants, folded once at build time (graph/fold_bn.py), one multiply-add an element.
    scale and shift are in the type the op computes in (float32 for 16-bit data), so that the
    folding rounds nothing the batch-norm would not have."""
    x, scale, shift = inputs
    ax = _channel_axis(x, attrs["axis"], "scale_shift")
    acc = acc_dtype(x.dtype)
    for what, v in (("scale", scale), ("shift", shift)):
        _check_vec("scale_shift", what, v, x.shape[ax], acc, of="the compute dtype")

    def fn(*i):
        ch = i[ax]
        out = (tir.Cast(acc, x(*i)) if acc != x.dtype else x(*i)) * scale(ch) + shift(ch)
        return tir.Cast(x.dtype, out) if acc != x.dtype else out

    return lazy(x.shape, x.dtype, fn)
