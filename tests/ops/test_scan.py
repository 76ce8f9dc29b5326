"""cumsum against numpy: every axis, exclusive and reverse, integer and half types; its kernel is a
reduce anchor (so every target's reduce templates schedule it) that takes an epilogue."""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tests.reference import assert_close, run_op


def np_cumsum(x, axis, exclusive=False, reverse=False):
    x = np.flip(x, axis) if reverse else x
    y = np.cumsum(x, axis=axis, dtype=x.dtype)
    if exclusive:
        y = np.concatenate([np.zeros_like(np.take(y, [0], axis)), np.delete(y, -1, axis)], axis)
    return np.flip(y, axis) if reverse else y


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cumsum(rng, axis, exclusive, reverse):
    x = rng.standard_normal((3, 4, 5)).astype("float32")
    y = run_op("cumsum", x, axis=axis, exclusive=exclusive, reverse=reverse)
    assert_close(y, np_cumsum(x.astype(np.float64), axis, exclusive, reverse), "float32")


def test_cumsum_int_exact(rng):
    x = rng.integers(-1000, 1000, (4, 33)).astype("int64")
    y = run_op("cumsum", x, axis=1, exclusive=True)
    np.testing.assert_array_equal(y, np_cumsum(x, 1, exclusive=True))


def test_cumsum_float16_accumulates_in_float32(rng):
    """3000 ones: a float16 running sum would stop at 2048 (2048 + 1 rounds back to 2048); the
    float32 one counts on, each sum rounded to float16 once, at the end."""
    x = np.full((1, 3000), 1.0, "float16")
    y = run_op("cumsum", x, axis=1)
    assert y.dtype == np.float16
    np.testing.assert_array_equal(y, np.arange(1, 3001).astype(np.float16).reshape(1, -1))


def test_cumsum_is_a_reduce_anchor_with_its_epilogue(rng):
    x = rng.standard_normal((2, 6)).astype("float32")
    b = tefuse.GraphBuilder()
    xi = b.input("x", x.shape)
    cg = tefuse.build(b.build(b.relu(b.cumsum(xi, axis=1))), "llvm")
    assert cg.num_kernels == 1 and cg.kernels[0].group.anchor_kind == "reduce"
    assert_close(cg.run(x)[0], np.maximum(np.cumsum(x.astype(np.float64), axis=1), 0), "float32")


@pytest.mark.parametrize("shape,dtype,axis,msg", [((3,), "float32", 1, "axis 1 out of range for rank 1"),
                                                  ((), "float32", 0, "expects at least 1 dim"),
                                                  ((3,), "bool", 0, "expects a numeric input, got bool")])
def test_cumsum_refusals(shape, dtype, axis, msg):
    with pytest.raises(tefuse.GraphError, match=f"cumsum: {msg}"):
        run_op("cumsum", np.zeros(shape, dtype), axis=axis)
