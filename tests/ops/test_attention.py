"""The fused attention op (ops/attention.py) on the CPU against float64 numpy: batch dims or
none, Lq != Lk, Dv != D, lengths off the op's padding tiles, fp16 inputs; bad operands named."""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse.errors import GraphError
from tests import reference as R


def attention_ref(q, k, v, alpha):
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    return R.softmax(alpha * q @ np.swapaxes(k, -1, -2), axis=-1) @ v


CASES = [
    pytest.param((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 4), 0.35, id="heads_lq5_lk7_dv4"),
    pytest.param((3, 70, 16), (3, 17, 16), (3, 17, 16), 0.25, id="rank3_past_one_row_tile"),
    pytest.param((9, 4), (9, 4), (9, 6), 1.0, id="no_batch_dims"),
]


@pytest.mark.parametrize("qs,ks,vs,alpha", CASES)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_attention_matches_numpy(rng, qs, ks, vs, alpha, dtype):
    q, k, v = (rng.standard_normal(s).astype(dtype) for s in (qs, ks, vs))
    got = R.run_op("attention", q, k, v, alpha=alpha)
    assert got.dtype == np.dtype(dtype) and got.shape == qs[:-1] + vs[-1:]
    R.assert_close(got, attention_ref(q, k, v, alpha), dtype)


def test_large_scores_do_not_overflow_in_fp16(rng):
    """Scores of 40 * 40 * 64 = 102400 (past fp16's range): they stay float32 inside the op, so
    every row is the softmax of equal scores, the mean of v."""
    q = np.full((1, 6, 64), 40, np.float16)
    v = rng.standard_normal((1, 6, 8)).astype(np.float16)
    got = R.run_op("attention", q, q, v, alpha=1.0)
    R.assert_close(got, np.broadcast_to(v.astype(np.float64).mean(axis=1, keepdims=True), got.shape), "float16")


@pytest.mark.parametrize("shapes,msg", [
    (((2, 5, 8), (2, 7, 4), (2, 7, 8)), r"q \[.., Lq, D\], k \[.., Lk, D\]"),
    (((2, 5, 8), (3, 7, 8), (3, 7, 8)), "batch dims differ"),
    (((2, 5, 8), (2, 7, 8), (2, 6, 8)), r"q \[.., Lq, D\], k \[.., Lk, D\]"),
])
def test_bad_operands_are_named(shapes, msg):
    b = tefuse.GraphBuilder()
    q, k, v = (b.input(n, s) for n, s in zip("qkv", shapes))
    with pytest.raises(GraphError, match=msg) as e:
        b.attention(q, k, v, name="att")
    assert "'att'" in str(e.value)


def test_alpha_must_be_positive():
    b = tefuse.GraphBuilder()
    q = b.input("q", (2, 4, 8))
    with pytest.raises(GraphError, match="alpha must be positive"):
        b.attention(q, q, q, alpha=-1.0)
