"""Shape arithmetic over symbolic dims at import (tefuse/frontend/onnx/shape_values.py): the
Shape -> Gather -> Unsqueeze -> Concat -> Reshape / Expand of PyTorch's exports, folded with the
dims kept symbolic, built once for llvm and checked against onnxruntime at three sizes."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import tefuse
from tefuse.errors import ModelImportError
from tefuse.frontend.onnx import import_onnx
from tefuse.frontend.onnx.context import Unsupported
from tefuse.frontend.onnx.shape_values import decide, shape_value
from tefuse.frontend.reference import onnxruntime_outputs
from tefuse.graph.dims import symbolic_dim

RANGES = {"N": "1:2:4", "S": "1:3:8"}
SIZES = ((1, 1), (2, 3), (4, 8))


def _ints(name, values):
    return numpy_helper.from_array(np.asarray(values, np.int64), name)


def _model(extra_nodes=()):
    """x [N, S, 8]: split into 2 heads of 4 by a target computed from Shape(x), heads swapped,
    flattened to [N*S, 8] and back; a class token [1, 1, 8] expanded to [N, 1, 8] (ViT's
    `class_token.expand(n, -1, -1)`) and put in front along S."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "S", 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", "T", 8])
    init = [_ints("i0", 0), _ints("i1", 1), _ints("ax0", [0]), _ints("heads", [2, 4]), _ints("h8", [8]),
            _ints("ones2", [1, 1]), numpy_helper.from_array(np.arange(8, dtype=np.float32).reshape(1, 1, 8), "cls")]
    nodes = [
        helper.make_node("Shape", ["x"], ["sx"]),
        helper.make_node("Gather", ["sx", "i0"], ["n"], axis=0),
        helper.make_node("Gather", ["sx", "i1"], ["s"], axis=0),
        helper.make_node("Unsqueeze", ["n", "ax0"], ["n1"]),
        helper.make_node("Unsqueeze", ["s", "ax0"], ["s1"]),
        helper.make_node("Concat", ["n1", "s1", "heads"], ["t4"], axis=0),
        helper.make_node("Reshape", ["x", "t4"], ["x4"]),
        helper.make_node("Transpose", ["x4"], ["x4t"], perm=[0, 1, 3, 2]),
        helper.make_node("Mul", ["n1", "s1"], ["ns"]),
        helper.make_node("Concat", ["ns", "h8"], ["t2"], axis=0),
        helper.make_node("Reshape", ["x4t", "t2"], ["x2"]),
        helper.make_node("Concat", ["n1", "s1", "h8"], ["t3"], axis=0),
        helper.make_node("Reshape", ["x2", "t3"], ["x3"]),
        helper.make_node("Concat", ["n1", "ones2"], ["tc"], axis=0),
        helper.make_node("Expand", ["cls", "tc"], ["c"]),
        helper.make_node("Concat", ["c", "x3"], ["y0" if extra_nodes else "y"], axis=1),
        *extra_nodes,  # these make y from y0
    ]
    g = helper.make_graph(nodes, "g", [x], [y], initializer=init)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _x(n, s):
    return np.random.default_rng(n * 10 + s).standard_normal((n, s, 8)).astype(np.float32)


@pytest.fixture(scope="module")
def built():
    model = _model()
    return model, tefuse.build(import_onnx(model, dynamic=True), "llvm", dynamic=RANGES)


def test_shape_arithmetic_folds_over_symbolic_dims_and_runs_any_size(built):
    model, cg = built
    assert str(cg.graph.outputs[0].shape) == "(N, S + T.int64(1), 8)"
    for n, s in SIZES:
        x = _x(n, s)
        np.testing.assert_array_equal(cg.run({"x": x})[0], onnxruntime_outputs(model, {"x": x})[0])
    exact = tefuse.build(import_onnx(model, input_shapes={"x": (2, 3, 8)}), "llvm")
    assert cg.num_kernels == exact.num_kernels


def test_a_saved_build_keeps_its_symbolic_targets(built, tmp_path):
    model, cg = built
    tefuse.save(cg, tmp_path / "m.tefuse")
    loaded = tefuse.load(tmp_path / "m.tefuse")
    expand = next(n for n in loaded.graph.nodes if n.op == "expand")
    assert str(expand.attrs["shape"][0]) == "N"
    for n, s in ((1, 2), (3, 5)):
        x = _x(n, s)
        np.testing.assert_array_equal(loaded.run({"x": x})[0], onnxruntime_outputs(model, {"x": x})[0])


def test_comparisons_are_decided_for_every_size_or_refused():
    n = symbolic_dim("N")
    assert decide(n >= 1, "t") is True
    assert decide(n + 1 == 0, "t") is False  # a dim is at least 1
    with pytest.raises(Unsupported, match="depends on the run-time sizes"):
        decide(n == 1, "t")
    assert shape_value([2, 3]).dtype == np.int64 and shape_value([n, 3]).dtype == object


def test_a_size_dependent_branch_is_one_line_naming_the_node():
    where = [helper.make_node("Equal", ["n1", "ones2"], ["is1"], name="is_batch_one"),
             helper.make_node("Gather", ["is1", "i0"], ["b"], axis=0),
             helper.make_node("Where", ["b", "y0", "cls"], ["y"])]
    with pytest.raises(ModelImportError) as e:
        import_onnx(_model(where), dynamic=True)
    line = next(ln for ln in str(e.value).splitlines() if "is_batch_one" in ln)
    assert "depends on the run-time sizes" in line


def test_a_shape_used_as_a_tensor_is_one_line():
    use = [helper.make_node("Cast", ["sx"], ["sf"], to=TensorProto.FLOAT, name="shape_as_float"),
           helper.make_node("Gather", ["sf", "i0"], ["f"], axis=0),
           helper.make_node("Mul", ["y0", "f"], ["y"])]
    with pytest.raises(ModelImportError) as e:
        import_onnx(_model(use), dynamic=True)
    line = next(ln for ln in str(e.value).splitlines() if "shape_as_float" in ln)
    assert "non-integer type" in line and "Traceback" not in str(e.value)
