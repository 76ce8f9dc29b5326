"""Bad arguments to the Python API: refused at once, in one line that names them, never
coerced (a float dim truncated, an unknown dtype kept until the build) nor a TVM stack."""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse import GraphBuilder
from tefuse.errors import BuildError, GraphError


@pytest.mark.parametrize("shape", [(1.9, 3), (2.0, 3), (True, 3), ("2", 3)])
def test_non_integer_dims_are_refused(shape):
    with pytest.raises(GraphError, match=r"input 'x': dims must be integers"):
        GraphBuilder().input("x", shape)


def test_numpy_integer_dims_are_taken():
    assert GraphBuilder().input("x", (np.int64(2), 3)).shape == (2, 3)


@pytest.mark.parametrize("dtype", ["float33", "f32", "int7"])
def test_an_unknown_dtype_is_refused_when_the_input_is_made(dtype):
    with pytest.raises(GraphError, match=f"input 'x': unknown dtype '{dtype}'"):
        GraphBuilder().input("x", (2, 3), dtype)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int8", "uint8", "bool"])
def test_known_dtypes_are_taken(dtype):
    assert GraphBuilder().input("x", (2, 3), dtype).dtype == dtype


def test_a_nan_activation_parameter_is_refused_as_a_fusion_plan_refuses_it():
    b = GraphBuilder()
    x = b.input("x", (2, 3))
    with pytest.raises(GraphError, match="leaky_relu: alpha must be a number, got nan"):
        b.leaky_relu(x, alpha=float("nan"))
    y = b.leaky_relu(x, alpha=0.2)  # the refused node left its name free; a number is fine
    a = np.array([[-1, 2, -3], [4, -5, 6]], np.float32)
    np.testing.assert_allclose(tefuse.build(b.build(y), "llvm").run(a)[0], np.where(a > 0, a, 0.2 * a), rtol=1e-6)


@pytest.mark.parametrize("graph,words", [(3, "got int 3"), ("model.onnx", "tefuse.import_onnx(path) first"),
                                         (None, "got NoneType")])
def test_build_of_something_not_a_graph(graph, words):
    with pytest.raises(BuildError) as e:
        tefuse.build(graph)
    assert "build: expected a tefuse Graph" in str(e.value) and words in str(e.value)
    assert "batch_sizes" not in str(e.value)


def test_build_with_target_none():
    b = GraphBuilder()
    g = b.build(b.relu(b.input("x", (2, 3))))
    with pytest.raises(BuildError, match="build: target is None"):
        tefuse.build(g, None)


def test_a_string_array_input_names_the_input():
    b = GraphBuilder()
    cg = tefuse.build(b.build(b.relu(b.input("x", (2, 3)))), "llvm")
    for bad in (np.array([["a", "b", "c"]] * 2), np.array([[object()] * 3] * 2, dtype=object)):
        with pytest.raises(tefuse.TefuseError, match=r"input 'x'"):
            cg.run(bad)
