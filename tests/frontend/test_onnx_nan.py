"""NaN and Clip edge semantics through the ONNX importer, against onnxruntime."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import tefuse
from tefuse.frontend.onnx import import_onnx
from tests.frontend.test_onnx import check, make_model

X = np.array([[np.nan, -1.0, 2.0, 7.0], [np.nan, -np.inf, np.inf, 0.5]], "float32")


@pytest.mark.parametrize("op", ["Relu", "Abs", "Neg"])
def test_unary_nan(op):
    check(make_model([helper.make_node(op, ["x"], ["y"])], {"x": (2, 4)}, {"y": None}), {"x": X})


@pytest.mark.parametrize("op", ["Max", "Min"])
def test_binary_nan(op):
    y = np.array([[1.0, np.nan, 3.0, np.nan], [0.0, np.nan, 1.0, 1.0]], "float32")
    check(make_model([helper.make_node(op, ["x", "y"], ["z"])], {"x": (2, 4), "y": (2, 4)}, {"z": None}),
          {"x": X, "y": y})


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
def test_reduce_nan(op):
    check(make_model([helper.make_node(op, ["x"], ["y"], axes=[1], keepdims=0)], {"x": (2, 4)},
                     {"y": None}), {"x": X})


def test_clip_const_min_greater_than_max():
    m = make_model([helper.make_node("Clip", ["x", "lo", "hi"], ["y"])], {"x": (2, 4)}, {"y": None},
                   {"lo": np.float32(2.0), "hi": np.float32(1.0)})
    check(m, {"x": X})


def test_clip_opset9_min_greater_than_max():
    """onnxruntime refuses this model (min_ <= max_); tefuse follows the spec: max."""
    m = make_model([helper.make_node("Clip", ["x"], ["y"], min=2.0, max=1.0)], {"x": (2, 4)}, {"y": None},
                   opset=9)
    got = tefuse.build(import_onnx(m), "llvm").run(x=X)[0]
    np.testing.assert_array_equal(got, np.where(np.isnan(X), np.nan, 1.0).astype("float32"))


def test_clip_runtime_min_greater_than_max():
    m = make_model([helper.make_node("Clip", ["x", "lo", "hi"], ["y"])], {"x": (2, 4), "lo": (), "hi": ()},
                   {"y": None})
    _, cg = check(m, {"x": X, "lo": np.array(2.0, np.float32), "hi": np.array(1.0, np.float32)})
    check(m, {"x": X, "lo": np.array(-0.5, np.float32), "hi": np.array(1.0, np.float32)})


def test_maxpool_and_global_maxpool_nan():
    x = np.random.default_rng(0).standard_normal((1, 2, 4, 4)).astype("float32")
    x[0, 0, 0, 0] = np.nan
    x[0, 1, 3, 2] = np.nan
    nodes = [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("GlobalMaxPool", ["x"], ["z"])]
    # onnxruntime's CPU MaxPool drops NaN (y = x > y ? x : y from lowest); numpy, PyTorch and
    # the ONNX reference implementation propagate it, and so does tefuse
    m = make_model(nodes, {"x": (1, 2, 4, 4)}, {"y": None, "z": None})
    y, z = tefuse.build(import_onnx(m), "llvm").run(x=x)
    np.testing.assert_array_equal(y, x.reshape(1, 2, 2, 2, 2, 2).max(axis=(3, 5)))
    np.testing.assert_array_equal(z, x.max(axis=(2, 3), keepdims=True))
    assert np.isnan(y).sum() == 2 and np.isnan(z).sum() == 2
