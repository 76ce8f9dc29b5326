"""Scaled dot-product attention as one op: softmax(alpha * q @ k^T) @ v over the last two axes.

Why an op: written as matmul -> softmax -> matmul (what torch.onnx exports), the [.., Lq, Lk]
scores go to global memory and back three times; ViT-B/16 at batch 32 spent 1.2 ms of its 4.6
there on the H100. graph/attention.py forms this op where the target has a
template for it; the CUDA one (schedules/cuda/attention.py) keeps a block's scores in shared
memory, as onnxruntime's and TensorRT's fused attention kernels do.

The compute is written padded: q rows to a multiple of ROW_TILE, keys to KEY_TILE, the padding
zeros (and left out of the softmax), so the tensor-core template tiles it without masks. The
scores accumulate and the softmax runs in float32; the probabilities are rounded to the inputs'
dtype before the second product, as the unfused fp16 graph does.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from tvm import te, tirx as tir

from ..errors import OpError
from .registry import OpPattern, register_op
from .value import Value, acc_dtype, te_compute

ROW_TILE = 64  # q rows a tensor-core block computes (4 warps of 16)
KEY_TILE = 16  # keys per fragment


@dataclass(frozen=True)
class AttentionBlocks:
    """Names of the op's TE stages: the attention template schedules them by these."""

    q: str = "attn_q"
    k: str = "attn_k"
    v: str = "attn_v"
    scores: str = "attn_scores"
    max: str = "attn_max"
    sum: str = "attn_sum"
    probs: str = "attn_probs"
    context: str = "attn_ctx"
    out: str = "attn_out"


BLOCKS = AttentionBlocks()


@dataclass(frozen=True)
class AttentionGeometry:
    """`batch` independent attentions (batch dims flattened) of lq queries over lk keys, head
    dim d (q, k) and dv (v); lq_pad and lk_pad: the padded extents the compute tiles."""

    batch: int
    lq: int
    lk: int
    d: int
    dv: int
    alpha: float

    @property
    def lq_pad(self) -> int:
        return -(-self.lq // ROW_TILE) * ROW_TILE

    @property
    def lk_pad(self) -> int:
        return -(-self.lk // KEY_TILE) * KEY_TILE


def _geometry(in_shapes, out_shape, attrs: dict) -> AttentionGeometry:
    q, k, v = in_shapes
    return AttentionGeometry(math.prod(q[:-2]), q[-2], k[-2], q[-1], v[-1], float(attrs.get("alpha", 1.0)))


def _check(q: Value, k: Value, v: Value, alpha: float) -> None:
    if q.ndim < 2 or k.ndim != q.ndim or v.ndim != q.ndim:
        raise OpError(f"attention: q, k, v must have one rank >= 2, got {q.shape}, {k.shape}, {v.shape}")
    if q.shape[:-2] != k.shape[:-2] or q.shape[:-2] != v.shape[:-2]:
        raise OpError(f"attention: batch dims differ: {q.shape}, {k.shape}, {v.shape}")
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise OpError(f"attention: q [.., Lq, D], k [.., Lk, D], v [.., Lk, Dv] expected, got "
                      f"{q.shape}, {k.shape}, {v.shape}")
    if len({q.dtype, k.dtype, v.dtype}) != 1:
        raise OpError(f"attention: dtypes differ: {q.dtype}, {k.dtype}, {v.dtype}")
    if not alpha > 0:
        raise OpError(f"attention: alpha must be positive, got {alpha}")


@register_op("attention", OpPattern.OUT_ELEMWISE_FUSABLE, anchor="attention", num_inputs=3,
             attrs={"alpha": 1.0}, geometry=_geometry)
def attention(inputs: Sequence[Value], attrs: dict) -> Value:
    """softmax(alpha * q @ k^T, axis=-1) @ v for q [.., Lq, D], k [.., Lk, D], v [.., Lk, Dv]."""
    q, k, v = inputs
    alpha = float(attrs["alpha"])
    _check(q, k, v, alpha)
    dt, acc = q.dtype, acc_dtype(q.dtype)
    lq, lk, d, dv = q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1]
    # rank-2 operands get a batch axis of one inside (a grid axis for the templates)
    batch, drop = (q.shape[:-2], 0) if q.ndim > 2 else ((1,), 1)
    geo = AttentionGeometry(1, lq, lk, d, dv, alpha)
    lqp, lkp = geo.lq_pad, geo.lk_pad
    zero = tir.const(0, dt)

    def padded(x: Value, rows: int, name: str) -> te.Tensor:
        n = x.shape[-2]
        return te_compute(batch + (rows, x.shape[-1]),
                          lambda *i: tir.if_then_else(i[-2] < n, x(*i[drop:]), zero), name=name)

    qs = padded(q, lqp, BLOCKS.q)
    ks = padded(k, lkp, BLOCKS.k)
    vs = padded(v, lkp, BLOCKS.v)
    rd = te.reduce_axis((0, d), "rd")
    s = te_compute(batch + (lqp, lkp),
                   lambda *i: te.sum(tir.Cast(acc, qs(*i[:-1], rd)) * tir.Cast(acc, ks(*i[:-2], i[-1], rd)),
                                     axis=rd), name=BLOCKS.scores, tag="attention")
    a = tir.const(alpha, acc)
    r1 = te.reduce_axis((0, lk), "r1")
    mx = te_compute(batch + (lqp,), lambda *i: te.max(s(*i, r1), axis=r1), name=BLOCKS.max)
    r2 = te.reduce_axis((0, lk), "r2")
    den = te_compute(batch + (lqp,), lambda *i: te.sum(tir.exp((s(*i, r2) - mx(*i)) * a), axis=r2),
                     name=BLOCKS.sum)

    def prob(*i):
        r = i[:-1]
        return tir.if_then_else(i[-1] < lk, tir.Cast(dt, tir.exp((s(*i) - mx(*r)) * a) / den(*r)), zero)

    p = te_compute(batch + (lqp, lkp), prob, name=BLOCKS.probs)
    rj = te.reduce_axis((0, lkp), "rj")
    o = te_compute(batch + (lqp, dv),
                   lambda *i: te.sum(tir.Cast(acc, p(*i[:-1], rj)) * tir.Cast(acc, vs(*i[:-2], rj, i[-1])),
                                     axis=rj), name=BLOCKS.context, tag="attention")
    out = te_compute(q.shape[:-2] + (lq, dv), lambda *i: tir.Cast(dt, o(*((0,) * drop + i))), name=BLOCKS.out)
    return Value.of_tensor(out)
