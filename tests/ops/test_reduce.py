"""reduce_sum/mean/max/min over axes with keepdims; softmax and log_softmax."""
from __future__ import annotations

import numpy as np
import pytest

from tests.reference import assert_close, log_softmax, run_op, softmax

NP = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}


@pytest.mark.parametrize("kind", list(NP))
@pytest.mark.parametrize("axes", [None, (0,), (1,), (-1,), (0, 2), (2, -3), (1, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduce(rng, kind, axes, keepdims):
    x = rng.standard_normal((3, 4, 5)).astype("float32")
    y = run_op(f"reduce_{kind}", x, axes=axes, keepdims=keepdims)
    ref = NP[kind](x.astype(np.float64), axis=axes, keepdims=keepdims)
    assert_close(y, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", list(NP))
def test_reduce_float16(rng, kind):
    x = rng.standard_normal((4, 64)).astype("float16")
    y = run_op(f"reduce_{kind}", x, axes=(1,))
    assert y.dtype == np.float16
    assert_close(y, NP[kind](x.astype(np.float64), axis=1), "float16", rtol=1e-2, atol=3e-2)


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax(rng, op, axis):
    x = (rng.standard_normal((3, 4, 5)) * 5).astype("float32")
    x[0, 0, 0] = 80.0  # stability: exp(80) overflows float32 without the max shift
    ref = (softmax if op == "softmax" else log_softmax)(x, axis=axis)
    assert_close(run_op(op, x, axis=axis), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_float16(rng, op):
    x = rng.standard_normal((4, 16)).astype("float16")
    y = run_op(op, x)
    assert y.dtype == np.float16
    assert_close(y, (softmax if op == "softmax" else log_softmax)(x), "float16")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_softmax_sums_in_float32(dtype):
    """4096 equal scores: each is 1/4096. Summed in fp16 the total stops at 2048 (2048 + 1 rounds
    back to 2048), giving 1/2048; precision.py leaves softmax in fp16 relying on this."""
    import ml_dtypes

    npd = np.float16 if dtype == "float16" else ml_dtypes.bfloat16
    y = run_op("softmax", np.zeros((2, 4096), npd)).astype(np.float32)
    np.testing.assert_allclose(y, np.full((2, 4096), 1 / 4096, np.float32), rtol=4e-3)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_softmax_over_the_first_valid_elements_writes_zeros_after(rng, dtype):
    """valid=5 of 8 (graph/attention_keys.py's padded scores): the padding, however large, takes
    no part, and comes out 0."""
    x = rng.standard_normal((3, 8)).astype(dtype)
    x[:, 5:] = 30.0
    y = run_op("softmax", x, axis=-1, valid=5)
    assert_close(y[:, :5], softmax(x[:, :5], axis=-1), dtype)
    np.testing.assert_array_equal(y[:, 5:], 0)


@pytest.mark.parametrize("valid", [9, -1])
def test_softmax_valid_outside_the_axis_is_one_clear_error(valid):
    from tefuse.errors import GraphError

    with pytest.raises(GraphError, match=rf"softmax: valid={valid} outside 1\.\.8"):
        run_op("softmax", np.zeros((2, 8), np.float32), valid=valid)


def test_softmax_without_valid_keeps_its_attributes_and_workload_key():
    """`valid` is optional: a softmax without it normalizes to what it did before the attribute
    existed, so shipped and users' tuning records keep matching (the key hashes the attributes)."""
    from tefuse.graph import GraphBuilder

    b = GraphBuilder()
    p = b.softmax(b.input("x", (2, 5, 8), "float16"), axis=-1)
    assert p.attrs == {"axis": -1}
    geo = b.softmax(b.input("y", (2, 5, 8), "float16"), axis=-1, valid=7).geometry
    assert (geo.rows, geo.extent) == (10, 7)
