"""dense (x @ W^T, weights [out, in]) and batched matmul with numpy broadcasting of batch dims."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

from tvm import te, tirx as tir

from ..errors import OpError
from .registry import OpPattern, register_op
from .codes import CODES, operand_dtypes, widen
from .value import MATH, OUT_DTYPE, Value, broadcast_shape, dim_of, lazy, tf32_operand, te_compute


def _finish(out: te.Tensor, dtype: str, attrs: dict) -> Value:
    """The accumulator times `alpha` (a product's folded scalar factor, graph/scales.py; ONNX
    Gemm's alpha), computed in the accumulator's float32 before the cast to the op's dtype: scaled
    after an fp16 cast, attention's unscaled scores could overflow."""
    alpha = float(attrs.get("alpha", 1.0))
    shape = tuple(dim_of(s) for s in out.shape)
    if alpha != 1.0:
        a = tir.const(alpha, str(out.dtype))
        return Value(shape, dtype, lambda *i: tir.Cast(dtype, out(*i) * a))
    if str(out.dtype) != dtype:
        return Value(shape, dtype, lambda *i: tir.Cast(dtype, out(*i)))
    return Value.of_tensor(out)


@dataclass(frozen=True)
class GemmGeometry:
    """A dense / matmul anchor as the GEMM it computes: `batch` independent [m, k] @ [k, n]
    products (batch dims broadcast and flattened). `stacked_rows_axis`: the batch axis of a
    seq-first a[..., 1, K] whose entries are stacked as the GEMM's rows (see `_rows_stacked`)."""

    batch: int
    m: int
    n: int
    k: int
    stacked_rows_axis: Optional[int] = None
    b_nk: bool = False  # B stored [N, K] (a dense's weight), as Hopper's wgmma reads it without a transpose

    @property
    def dims(self) -> tuple[int, int, int, int]:
        return self.batch, self.m, self.n, self.k


def _dense_geometry(in_shapes, out_shape, attrs: dict) -> GemmGeometry:
    (m, k), (n, _) = in_shapes
    return GemmGeometry(1, m, n, k, b_nk=True)


def _matmul_geometry(in_shapes, out_shape, attrs: dict) -> GemmGeometry:
    a, b = in_shapes
    if attrs.get("trans_b"):  # b stored [N, K]: the GEMM is a's rows (batch dims included) by N
        m = math.prod(a[:-1])
        splits = int(attrs.get("split_k", 1))  # split-K slices: a batch of K/S-deep GEMMs
        return GemmGeometry(splits, m, b[0], b[1] // splits, b_nk=True)
    axis = stacked_rows_axis(a, b)
    if axis is not None and a[-1] == b[0]:  # the op computes it as one GEMM over a's rows
        return GemmGeometry(1, a[axis], b[1], a[-1], stacked_rows_axis=axis)
    a2 = (1,) + tuple(a) if len(a) == 1 else tuple(a)
    b2 = tuple(b) + (1,) if len(b) == 1 else tuple(b)
    nb = max(len(a2), len(b2)) - 2
    pa, pb = (1,) * (nb - len(a2) + 2) + a2[:-2], (1,) * (nb - len(b2) + 2) + b2[:-2]
    batch = math.prod(max(x, y) for x, y in zip(pa, pb))
    return GemmGeometry(batch, a2[-2], b2[-1], a2[-1])


@register_op("dense", OpPattern.OUT_ELEMWISE_FUSABLE, anchor="dense", num_inputs=2,
             geometry=_dense_geometry, optional={**MATH, **OUT_DTYPE, **CODES, "alpha": 1.0})
def dense(inputs: Sequence[Value], attrs: dict) -> Value:
    """y[m, n] = alpha * sum_k x[m, k] * w[n, k]; math='tf32' rounds float32 operands to TF32 first."""
    x, w = inputs
    if x.ndim != 2 or w.ndim != 2:
        raise OpError(f"dense: expects 2-D data and weight, got {x.shape} and {w.shape}")
    if x.shape[1] != w.shape[1]:
        raise OpError(f"dense: data {x.shape} and weight {w.shape} ([out, in]) disagree on in_features")
    if x.dtype != w.dtype:
        raise OpError(f"dense: dtype mismatch {x.dtype} vs {w.dtype}")
    acc, res = operand_dtypes(x.dtype, attrs)
    cast = widen(attrs, lambda e: tir.Cast(acc, e))
    xt = tf32_operand(x, attrs).materialize("data_in")
    wt = tf32_operand(w, attrs).materialize("weight_in")
    k = te.reduce_axis((0, x.shape[1]), "k")
    out = te_compute((x.shape[0], w.shape[0]),
                     lambda i, j: te.sum(cast(xt[i, k]) * cast(wt[j, k]), axis=k),
                     name="dense", tag="dense")
    return _finish(out, res, attrs)


@register_op("matmul", OpPattern.OUT_ELEMWISE_FUSABLE, anchor="dense", num_inputs=2,
             geometry=_matmul_geometry, optional={**MATH, **OUT_DTYPE, **CODES, "trans_b": False, "alpha": 1.0, "split_k": 1})
def matmul(inputs: Sequence[Value], attrs: dict) -> Value:
    """numpy.matmul semantics for ranks >= 1 (1-D operands promoted and squeezed), times alpha;
    math='tf32' rounds float32 operands to TF32 first. trans_b=True: b is a 2-D [N, K] (a Linear's weight,
    see graph/weights.py), a[..., K] @ b.T; with split_k=S (alpha 1) S float32 partial products
    over K/S each, [S, ..., N], for a `split_sum` to add up (graph/split_k.py)."""
    a, b = (tf32_operand(v, attrs) for v in inputs)
    if a.dtype != b.dtype:
        raise OpError(f"matmul: dtype mismatch {a.dtype} vs {b.dtype}")
    if attrs.get("trans_b"):
        return _matmul_nk(a, b, attrs)
    if attrs.get("split_k", 1) != 1:
        raise OpError("matmul: split_k needs trans_b (b a 2-D [N, K] weight)")
    if a.ndim == 0 or b.ndim == 0:
        raise OpError("matmul: scalar operands are not allowed")
    axis = stacked_rows_axis(a.shape, b.shape)
    if axis is not None and a.shape[-1] == b.shape[0]:
        return _rows_stacked(a, b, axis, attrs)
    squeeze_a, squeeze_b = a.ndim == 1, b.ndim == 1
    if squeeze_a:
        a = Value((1,) + a.shape, a.dtype, lambda _z, i, _a=a: _a(i))
    if squeeze_b:
        b = Value(b.shape + (1,), b.dtype, lambda i, _z, _b=b: _b(i))
    if a.shape[-1] != b.shape[-2]:
        raise OpError(f"matmul: inner dimensions differ: {a.shape} @ {b.shape}")
    batch = broadcast_shape([a.shape[:-2], b.shape[:-2]], "matmul's batch dims")
    m, kk, n = a.shape[-2], a.shape[-1], b.shape[-1]
    at = Value(batch + (m, kk), a.dtype, _batched(a, batch)).materialize("data_in")
    bt = Value(batch + (kk, n), b.dtype, _batched(b, batch)).materialize("weight_in")
    acc, res_dtype = operand_dtypes(a.dtype, attrs)
    cast = widen(attrs, lambda e: tir.Cast(acc, e))
    k = te.reduce_axis((0, kk), "k")
    out = te_compute(batch + (m, n),
                     lambda *i: te.sum(cast(at(*i[:-1], k)) * cast(bt(*i[:-2], k, i[-1])),
                                       axis=k), name="matmul", tag="dense")
    res = _finish(out, res_dtype, attrs)
    if squeeze_a or squeeze_b:
        shape = batch + ((m,) if not squeeze_a else ()) + ((n,) if not squeeze_b else ())

        def fn(*i):
            i = list(i)
            idx = i[:len(batch)]
            idx.append(0 if squeeze_a else i[len(batch)])
            idx.append(0 if squeeze_b else i[-1])
            return res(*idx)

        return lazy(shape, res_dtype, fn)
    return res


def _matmul_nk(a: Value, b: Value, attrs: dict) -> Value:
    """a[..., K] @ b[N, K].T as one GEMM over all of a's rows: b is read [N, K] (K fastest, as
    wgmma takes it) with no batch dims of its own, so a's batch dims are GEMM rows."""
    if b.ndim != 2 or a.ndim < 2:
        raise OpError(f"matmul(trans_b): expects a[..., K] and a 2-D b[N, K], got {a.shape} and {b.shape}")
    if a.shape[-1] != b.shape[1]:
        raise OpError(f"matmul(trans_b): inner dimensions differ: {a.shape} @ {b.shape}.T")
    at = a.materialize("data_in")
    bt = b.materialize("weight_in")
    acc, res = operand_dtypes(a.dtype, attrs)
    splits = attrs.get("split_k", 1)
    if splits != 1:
        return _matmul_nk_split(at, bt, splits, acc, attrs)
    cast = widen(attrs, lambda e: tir.Cast(acc, e))
    k = te.reduce_axis((0, a.shape[-1]), "k")
    out = te_compute(a.shape[:-1] + (b.shape[0],),
                     lambda *i: te.sum(cast(at(*i[:-1], k)) * cast(bt(i[-1], k)), axis=k),
                     name="matmul", tag="dense")
    return _finish(out, res, attrs)


def _matmul_nk_split(at: te.Tensor, bt: te.Tensor, splits, acc: str, attrs: dict) -> Value:
    """a[..., K] @ b[N, K].T as `splits` partial products over K/S each, [S, ..., N] in the
    accumulator's dtype: the slices are a batch axis of the GEMM the tensor-core template tiles."""
    kk = int(at.shape[-1])
    if not isinstance(splits, int) or splits < 1 or kk % splits:
        raise OpError(f"matmul: split_k={splits!r} must be a positive integer dividing K={kk}")
    if float(attrs.get("alpha", 1.0)) != 1.0:
        raise OpError("matmul: split_k with alpha != 1 (the scale belongs after the sum)")
    ks = kk // splits
    cast = widen(attrs, lambda e: tir.Cast(acc, e))
    k = te.reduce_axis((0, ks), "k")
    shape = (splits,) + tuple(dim_of(d) for d in at.shape[:-1]) + (int(bt.shape[0]),)
    out = te_compute(shape, lambda s, *i: te.sum(cast(at(*i[:-1], s * ks + k))
                                                 * cast(bt(i[-1], s * ks + k)), axis=k),
                     name="matmul", tag="dense")
    return Value.of_tensor(out)


def stacked_rows_axis(a_shape: Sequence[int], b_shape: Sequence[int]):
    """The batch axis of `a` whose entries a matmul stacks as GEMM rows (see `_rows_stacked`),
    else None. GemmGeometry records it."""
    if len(b_shape) != 2 or len(a_shape) < 3 or a_shape[-2] != 1:
        return None
    lead = [k for k, s in enumerate(a_shape[:-2]) if s != 1]
    return lead[0] if len(lead) == 1 else None


def _rows_stacked(a: Value, b: Value, axis: int, attrs: dict) -> Value:
    """a[..., 1, K] @ b[K, N] with one batch dim that is not 1 (seq-first attention, as torch's
    MultiheadAttention exports it: [197, 1, 768] @ [768, 2304]) as ONE [rows, K] @ [K, N] GEMM.

    Why: as a batched matmul it is 197 GEMVs that each read all of b; stacked, the dense
    template tiles 197 rows. Only this case: its output index maps onto the GEMM's rows by a
    relabelling, so the epilogue still computes from registers.
    """
    def row_of(r, k):
        idx = [0] * (a.ndim - 2)
        idx[axis] = r
        return a(*idx, 0, k)

    res = matmul([Value((a.shape[axis], a.shape[-1]), a.dtype, row_of), b], attrs)
    return lazy(a.shape[:-1] + (b.shape[-1],), res.dtype, lambda *i: res(i[axis], i[-1]))


def _batched(v: Value, batch: tuple[int, ...]):
    """Index function reading `v` with its batch dims broadcast to `batch`."""
    nb, off = v.ndim - 2, len(batch) - (v.ndim - 2)

    def fn(*i):
        sub = [i[off + k] if v.shape[k] != 1 else 0 for k in range(nb)]
        return v(*sub, *i[-2:])

    return fn
