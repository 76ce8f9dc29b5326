"""bias_add, inference batch_norm and scale_shift (NCHW axis 1, NHWC axis -1, float16)."""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tests.reference import Const, assert_close, batch_norm, run_op


@pytest.mark.parametrize("shape,axis", [((2, 4, 3, 3), 1), ((2, 3, 3, 4), -1), ((2, 3, 3, 4), 3), ((5, 4), 1)])
@pytest.mark.parametrize("as_const", [False, True])
def test_bias_add(rng, shape, axis, as_const):
    x = rng.standard_normal(shape).astype("float32")
    c = shape[axis]
    bias = rng.standard_normal(c).astype("float32")
    bshape = [1] * len(shape)
    bshape[axis] = c
    y = run_op("bias_add", x, Const(bias) if as_const else bias, axis=axis)
    assert_close(y, x.astype(np.float64) + bias.reshape(bshape))


def test_bias_add_wrong_length():
    with pytest.raises(tefuse.GraphError, match="bias"):
        run_op("bias_add", np.zeros((1, 4, 2, 2), "float32"), np.zeros(3, "float32"))


def _bn_params(rng, c, dtype):
    gamma = rng.uniform(0.5, 1.5, c).astype(dtype)
    beta = rng.standard_normal(c).astype(dtype)
    mean = rng.standard_normal(c).astype(dtype)
    var = rng.uniform(0.2, 2.0, c).astype(dtype)
    return gamma, beta, mean, var


@pytest.mark.parametrize("shape,axis", [((2, 4, 3, 3), 1), ((2, 3, 3, 4), -1), ((3, 6), 1)])
@pytest.mark.parametrize("eps", [1e-5, 1e-3])
def test_batch_norm(rng, shape, axis, eps):
    x = rng.standard_normal(shape).astype("float32")
    p = _bn_params(rng, shape[axis], "float32")
    y = run_op("batch_norm", x, *map(Const, p), axis=axis, epsilon=eps)
    assert_close(y, batch_norm(x.astype(np.float64), *p, eps=eps, axis=axis % x.ndim), rtol=1e-5, atol=1e-5)


def test_batch_norm_params_as_inputs(rng):
    x = rng.standard_normal((1, 3, 4, 4)).astype("float32")
    p = _bn_params(rng, 3, "float32")
    assert_close(run_op("batch_norm", x, *p), batch_norm(x.astype(np.float64), *p), rtol=1e-5, atol=1e-5)


def test_batch_norm_float16(rng):
    x = rng.standard_normal((1, 4, 3, 3)).astype("float16")
    p = _bn_params(rng, 4, "float16")
    y = run_op("batch_norm", x, *map(Const, p))
    assert y.dtype == np.float16
    assert_close(y, batch_norm(x.astype(np.float64), *p), "float16")


def test_batch_norm_wrong_param_shape():
    x = np.zeros((1, 4, 2, 2), "float32")
    with pytest.raises(tefuse.GraphError, match="var"):
        run_op("batch_norm", x, *(np.zeros(4, "float32"),) * 3, np.zeros(5, "float32"))


@pytest.mark.parametrize("shape, axis, dtype", [((2, 4, 3, 3), 1, "float32"), ((2, 3, 3, 4), -1, "float32"),
                                                ((2, 3, 3, 8), 3, "float16")])
def test_scale_shift(rng, shape, axis, dtype):
    """x * scale + shift per channel, the parameters in the compute type (float32 for fp16 data)."""
    x = rng.standard_normal(shape).astype(dtype)
    bshape = [1] * len(shape)
    bshape[axis] = -1
    scale, shift = (rng.standard_normal(shape[axis]).astype("float32") for _ in range(2))
    y = run_op("scale_shift", x, Const(scale), shift, axis=axis)
    assert y.dtype == np.dtype(dtype)
    assert_close(y, x.astype(np.float64) * scale.reshape(bshape) + shift.reshape(bshape), dtype)


def test_scale_shift_parameters_in_the_data_type_of_fp16_are_refused():
    x = np.zeros((1, 2, 2, 4), "float16")
    with pytest.raises(tefuse.GraphError, match="scale dtype float16 differs from the compute dtype float32"):
        run_op("scale_shift", x, np.ones(4, "float16"), np.zeros(4, "float32"), axis=3)
