"""pad, reshape, flatten, transpose, layout_transform, concat, squeeze/expand_dims, slice."""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tests.reference import assert_close, run_op


def exact(y, ref):
    assert y.shape == ref.shape, (y.shape, ref.shape)
    assert y.dtype == ref.dtype
    np.testing.assert_array_equal(y, ref)


@pytest.mark.parametrize("pads,value", [((0, 1, 2, 0, 3, 1), 0.0), ((1, 0, 0, 0, 0, 2), -1.5),
                                        ((0, 0, 0, 0, 0, 0), 0.0)])
def test_pad(rng, pads, value):
    x = rng.standard_normal((2, 3, 4)).astype("float32")
    y = run_op("pad", x, pads=pads, value=value)
    exact(y, np.pad(x, list(zip(pads[:3], pads[3:])), constant_values=value))


@pytest.mark.parametrize("shape", [(6, 4), (-1, 4), (2, -1), (0, -1), (0, 3, -1), (24,), (1, 2, 1, 12), (4, 0, 2)])
def test_reshape(rng, shape):
    x = rng.standard_normal((2, 3, 4)).astype("float32")
    ref_shape = [x.shape[k] if s == 0 else s for k, s in enumerate(shape)]
    exact(run_op("reshape", x, shape=shape), x.reshape(ref_shape))


def test_reshape_bad():
    with pytest.raises(tefuse.GraphError, match="reshape"):
        run_op("reshape", np.zeros((2, 3), "float32"), shape=(4, -1))


@pytest.mark.parametrize("axis", [0, 1, 2, 3, -1])
def test_flatten(rng, axis):
    x = rng.standard_normal((2, 3, 2, 2)).astype("float32")
    ax = axis % 4 if axis < 0 else axis
    exact(run_op("flatten", x, axis=axis), x.reshape(int(np.prod(x.shape[:ax])), -1))


@pytest.mark.parametrize("axes", [None, (0, 2, 1), (2, 0, 1), (1, 2, 0), (-1, 0, 1)])
def test_transpose(rng, axes):
    x = rng.standard_normal((2, 3, 4)).astype("float32")
    exact(run_op("transpose", x, axes=axes), np.transpose(x, axes))


@pytest.mark.parametrize("src,dst,perm", [("NCHW", "NHWC", (0, 2, 3, 1)), ("NHWC", "NCHW", (0, 3, 1, 2))])
def test_layout_transform(rng, src, dst, perm):
    x = rng.standard_normal((2, 3, 4, 5)).astype("float32")
    exact(run_op("layout_transform", x, src=src, dst=dst), x.transpose(perm))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(rng, axis):
    shapes = [(2, 3, 4), (2, 3, 4), (2, 3, 4)]
    xs = []
    for k, s in enumerate(shapes):
        s = list(s)
        s[axis] = k + 1
        xs.append(rng.standard_normal(s).astype("float32"))
    exact(run_op("concat", *xs, axis=axis), np.concatenate(xs, axis=axis))


def test_concat_single(rng):
    x = rng.standard_normal((2, 3)).astype("float32")
    exact(run_op("concat", x, axis=1), x)


@pytest.mark.parametrize("axes", [None, (1,), (-1,), (1, 3)])
def test_squeeze(rng, axes):
    x = rng.standard_normal((2, 1, 3, 1)).astype("float32")
    exact(run_op("squeeze", x, axes=axes), np.squeeze(x, axis=axes))


def test_squeeze_non_unit():
    with pytest.raises(tefuse.GraphError, match="squeeze"):
        run_op("squeeze", np.zeros((2, 3), "float32"), axes=(0,))


@pytest.mark.parametrize("axes", [(0,), (1,), (-1,), (0, 3), (1, 2)])
def test_expand_dims(rng, axes):
    x = rng.standard_normal((2, 3)).astype("float32")
    exact(run_op("expand_dims", x, axes=axes), np.expand_dims(x, axes))


SLICES = [
    dict(starts=(1,), ends=(3,)),
    dict(starts=(0, 1), ends=(2, 5), axes=(0, 2)),
    dict(starts=(-1,), ends=(-1000,), axes=(1,), steps=(-1,)),  # full reverse
    dict(starts=(4,), ends=(0,), axes=(2,), steps=(-2,)),
    dict(starts=(10,), ends=(-10,), axes=(-1,), steps=(-3,)),  # clamped out-of-range starts
    dict(starts=(0, 0), ends=(100, 100), axes=(1, 2), steps=(2, 3)),
    dict(starts=(-3,), ends=(-1,), axes=(2,)),
    dict(starts=(1, 3), ends=(-1000, 0), axes=(0, 2), steps=(-1, -1)),
]


def _np_slice(x, starts, ends, axes=None, steps=None):
    axes = list(range(len(starts))) if axes is None else list(axes)
    steps = steps or [1] * len(axes)
    sl = [slice(None)] * x.ndim
    for a, s, e, st in zip(axes, starts, ends, steps):
        if st < 0 and e <= -x.shape[a] - 1:
            e = None  # ONNX: an end below -dim means "through index 0"
        sl[a] = slice(s, e, st)
    return x[tuple(sl)]


@pytest.mark.parametrize("attrs", SLICES, ids=[str(i) for i in range(len(SLICES))])
def test_slice(rng, attrs):
    x = rng.standard_normal((3, 4, 6)).astype("float32")
    exact(run_op("slice", x, **attrs), _np_slice(x, **attrs))


def test_transform_float16_and_int(rng):
    x = rng.standard_normal((2, 3)).astype("float16")
    exact(run_op("transpose", x), x.T)
    i = rng.integers(0, 100, (2, 3, 4)).astype("int32")
    exact(run_op("reshape", i, shape=(4, -1)), i.reshape(4, -1))
