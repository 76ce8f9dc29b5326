"""Scaled dot-product attention as one op: softmax(alpha * q @ k^T + bias) @ v over the last two
axes, the additive bias optional (a key mask, a causal mask, a relative-position bias).

Why an op: written as matmul -> softmax -> matmul (what torch.onnx exports), the [.., Lq, Lk]
scores go to global memory and back three times; ViT-B/16 at batch 32 spent 1.2 ms of its 4.6
there on the H100. graph/attention.py forms this op where the target has a
template for it; the CUDA one (schedules/cuda/attention.py) keeps a block's scores in shared
memory, as onnxruntime's and TensorRT's fused attention kernels do.

The compute is written padded: q rows to a multiple of ROW_TILE, keys to KEY_TILE, the padding
zeros (and left out of the softmax), so the tensor-core template tiles it without masks. The
scores accumulate and the softmax runs in float32; the probabilities are rounded to the inputs'
dtype before the second product, as the unfused fp16 graph does.

The bias is read broadcast (any batch dim, and the query dim, may be 1) and added in float32 to
the scaled scores; `clip` > 0 clamps the sum to [-clip, clip], as an fp16 graph saturates its
masked scores before the softmax (graph/precision.py), so a mask of float32's lowest value
stays finite and a fully masked row is uniform, as it is unfused.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from tvm import te, tirx as tir

from ..errors import OpError
from .registry import OpPattern, register_op
from .value import Value, acc_dtype, broadcast_to, te_compute

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
    bias: str = "attn_bias"
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
    bias_rows: int = 0  # an additive bias's rows: 0 none, 1 one row for every query (a key mask), else lq
    clip: float = 0.0  # > 0: the biased scores clamped to [-clip, clip]

    @property
    def lq_pad(self) -> int:
        return -(-self.lq // ROW_TILE) * ROW_TILE

    @property
    def lk_pad(self) -> int:
        return -(-self.lk // KEY_TILE) * KEY_TILE


def bias_rows(bias_shape: Sequence[int], lq: int) -> int:
    """The rows of an additive bias over [.., Lq, Lk] scores: 1 where every query reads the same
    row (a key mask [B, 1, 1, Lk]), else lq."""
    return 1 if len(bias_shape) < 2 or bias_shape[-2] == 1 else lq


def _geometry(in_shapes, out_shape, attrs: dict) -> AttentionGeometry:
    q, k, v, *bias = in_shapes
    return AttentionGeometry(math.prod(q[:-2]), q[-2], k[-2], q[-1], v[-1], float(attrs.get("alpha", 1.0)),
                             bias_rows(bias[0], q[-2]) if bias else 0, float(attrs.get("clip", 0.0)))


def bias_broadcasts(bias_shape: Sequence[int], scores_shape: Sequence[int]) -> bool:
    """Whether a bias of this shape broadcasts to the scores [.., Lq, Lk] (numpy's rules, the bias
    no wider)."""
    return len(bias_shape) <= len(scores_shape) and all(
        b in (1, s) for b, s in zip(reversed(tuple(bias_shape)), reversed(tuple(scores_shape))))


def _check_bias(q: Value, k: Value, bias: Value) -> None:
    want = (*q.shape[:-1], k.shape[-2])
    if not bias_broadcasts(bias.shape, want):
        raise OpError(f"attention: the bias {bias.shape} does not broadcast to the scores {want}")
    if bias.shape[-1] != k.shape[-2]:
        raise OpError(f"attention: the bias {bias.shape} must have one column a key ({k.shape[-2]})")


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


@register_op("attention", OpPattern.OUT_ELEMWISE_FUSABLE, anchor="attention",
             attrs={"alpha": 1.0, "clip": 0.0}, optional={"clip": 0.0}, geometry=_geometry)
def attention(inputs: Sequence[Value], attrs: dict) -> Value:
    """softmax(alpha * q @ k^T + bias, axis=-1) @ v for q [.., Lq, D], k [.., Lk, D], v [.., Lk, Dv]
    and an optional bias broadcast to [.., Lq, Lk] (clamped to +-clip where clip > 0)."""
    if len(inputs) not in (3, 4):
        raise OpError(f"attention: q, k, v and an optional bias expected, got {len(inputs)} inputs")
    q, k, v, *bias_in = inputs
    alpha, clip = float(attrs["alpha"]), float(attrs.get("clip", 0.0))
    _check(q, k, v, alpha)
    if bias_in:
        _check_bias(q, k, bias_in[0])
    elif clip:
        raise OpError(f"attention: clip {clip} clamps the scores' sum with a bias, and no bias is given")
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
    if bias_in:  # the logits alpha * s + bias (clamped), their softmax as below without the scale
        b = _padded_bias(bias_in[0], batch, drop, lq, lk, lqp, lkp, acc)
        rows = b.shape[-2]

        def logit(*i):
            t = s(*i) * a + b(*i[:-2], i[-2] if rows != 1 else 0, i[-1])
            return tir.max(tir.min(t, tir.const(clip, acc)), tir.const(-clip, acc)) if clip > 0 else t

        def expo(*i):
            return tir.exp(logit(*i) - mx(*i[:-1]))
    else:
        def logit(*i):
            return s(*i)

        def expo(*i):
            return tir.exp((s(*i) - mx(*i[:-1])) * a)
    r1 = te.reduce_axis((0, lk), "r1")
    mx = te_compute(batch + (lqp,), lambda *i: te.max(logit(*i, r1), axis=r1), name=BLOCKS.max)
    r2 = te.reduce_axis((0, lk), "r2")
    den = te_compute(batch + (lqp,), lambda *i: te.sum(expo(*i, r2), axis=r2), name=BLOCKS.sum)

    def prob(*i):
        return tir.if_then_else(i[-1] < lk, tir.Cast(dt, expo(*i) / den(*i[:-1])), zero)

    p = te_compute(batch + (lqp, lkp), prob, name=BLOCKS.probs)
    rj = te.reduce_axis((0, lkp), "rj")
    o = te_compute(batch + (lqp, dv),
                   lambda *i: te.sum(tir.Cast(acc, p(*i[:-1], rj)) * tir.Cast(acc, vs(*i[:-2], rj, i[-1])),
                                     axis=rj), name=BLOCKS.context, tag="attention")
    out = te_compute(q.shape[:-2] + (lq, dv), lambda *i: tir.Cast(dt, o(*((0,) * drop + i))), name=BLOCKS.out)
    return Value.of_tensor(out)


def _padded_bias(bias: Value, batch: tuple, drop: int, lq: int, lk: int, lqp: int, lkp: int, acc: str) -> te.Tensor:
    """The bias as a [*batch, rows, Lk_pad] float32 stage (rows 1 for a key mask, else Lq_pad),
    zero in the padding: the templates copy it into shared memory by this stage's name."""
    rows = bias_rows(bias.shape, lq)
    full = (*batch, rows if rows == 1 else lqp, lkp)
    read = broadcast_to(bias, (*batch[drop:], rows, lk))  # the op's own batch axes (a rank-2 op's added one dropped)

    def at(*i):
        inside = i[-1] < lk if rows == 1 else tir.all(i[-2] < lq, i[-1] < lk)
        return tir.if_then_else(inside, tir.Cast(acc, read(*i[drop:])), tir.const(0, acc))

    return te_compute(full, at, name=BLOCKS.bias)
