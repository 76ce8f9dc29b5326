"""The fused attention op (ops/attention.py) on the CPU against float64 numpy: batch dims or
none, Lq != Lk, Dv != D, lengths off the op's padding tiles, fp16 inputs; bad operands named."""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse.errors import GraphError
from tests import reference as R


def attention_ref(q, k, v, alpha, bias=None, clip=0.0):
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    t = alpha * q @ np.swapaxes(k, -1, -2)
    if bias is not None:
        t = t + np.asarray(bias, np.float64)
        t = np.clip(t, -clip, clip) if clip > 0 else t
    return R.softmax(t, axis=-1) @ v


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


BIAS_CASES = [
    pytest.param((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 4), (2, 1, 1, 7), id="key_mask_per_batch"),
    pytest.param((2, 3, 70, 16), (2, 3, 70, 16), (2, 3, 70, 16), (2, 1, 70, 70), id="rows_per_batch"),
    pytest.param((3, 9, 8), (3, 11, 8), (3, 11, 8), (9, 11), id="rows_shared_by_every_batch"),
    pytest.param((9, 4), (6, 4), (6, 4), (6,), id="no_batch_dims_key_vector"),
]


@pytest.mark.parametrize("qs,ks,vs,bs", BIAS_CASES)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_a_bias_is_added_to_the_scaled_scores(rng, qs, ks, vs, bs, dtype):
    q, k, v = (rng.standard_normal(s).astype(dtype) for s in (qs, ks, vs))
    bias = (rng.standard_normal(bs) * 2).astype("float32")
    got = R.run_op("attention", q, k, v, bias, alpha=0.3)
    assert got.shape == qs[:-1] + vs[-1:]
    R.assert_close(got, attention_ref(q, k, v, 0.3, bias), dtype)


def test_a_mask_of_the_lowest_float_with_clip_masks_keys_and_leaves_masked_rows_uniform(rng):
    """BERT's and GPT-2's masks add float32's lowest value; an fp16 graph clamps the sum to
    +-65504 before its softmax. Masked keys weigh nothing; a row with every key masked is the
    mean of v, as unfused (not NaN)."""
    q, k, v = (rng.standard_normal((2, 2, 6, 8)).astype("float16") for _ in range(3))
    lowest = np.finfo(np.float32).min
    bias = np.zeros((2, 1, 6, 6), np.float32)
    bias[0, 0, :, 4:] = lowest  # the last two keys of batch 0 masked
    bias[1, 0, 3, :] = lowest   # row 3 of batch 1: every key
    got = R.run_op("attention", q, k, v, bias, alpha=0.5, clip=65504.0)
    want = attention_ref(q, k, v, 0.5, bias, clip=65504.0)
    assert np.isfinite(got.astype(np.float32)).all()
    R.assert_close(got, want, "float16")
    R.assert_close(got[1, :, 3], np.broadcast_to(v[1].astype(np.float64).mean(axis=1), (2, 8)), "float16")


@pytest.mark.parametrize("bs,msg", [
    ((2, 3, 5, 6), "does not broadcast"),
    ((2, 3, 5, 1), "one column a key"),
])
def test_a_bias_that_does_not_fit_the_scores_is_named(bs, msg):
    b = tefuse.GraphBuilder()
    q, k = b.input("q", (2, 3, 5, 8)), b.input("k", (2, 3, 7, 8))
    with pytest.raises(GraphError, match=msg) as e:
        b.attention(q, k, k, b.input("m", bs), name="att")
    assert "'att'" in str(e.value)


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


def test_a_clip_without_a_bias_is_named():
    b = tefuse.GraphBuilder()
    q = b.input("q", (2, 4, 8))
    with pytest.raises(GraphError, match="clip 0.5 clamps the scores' sum with a bias, and no bias is given"):
        b.attention(q, q, q, clip=0.5, name="att")
