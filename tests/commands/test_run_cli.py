"""`tefuse run`: ONNX models built, run and checked against onnxruntime through the CLI entry."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tefuse.cli import main
from tefuse.frontend.randomize import randomize_constant_weights

pytest.importorskip("onnxruntime")


def _constant_fill_model(path):
    """conv (weight a ConstantOfShape fill, as the ONNX zoo's light models store it) + relu +
    global pool: every output equals every other."""
    nodes = [helper.make_node("ConstantOfShape", ["wshape"], ["w"],
                              value=numpy_helper.from_array(np.array([0.1], np.float32))),
             helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["y"])]
    g = helper.make_graph(nodes, "fill", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 1, 1])],
                          [numpy_helper.from_array(np.array([4, 3, 3, 3], np.int64), "wshape")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), str(path))
    return path


def test_a_constant_reference_is_flagged_and_random_weights_fix_it(tmp_path, capsys):
    path = _constant_fill_model(tmp_path / "fill.onnx")
    assert main(["run", str(path), "--check", "--repeat", "0"]) == 0
    out = capsys.readouterr()
    assert "is constant" in out.err and "--random-weights" in out.err
    assert main(["run", str(path), "--check", "--repeat", "0", "--random-weights"]) == 0
    out = capsys.readouterr()
    assert "1 constant-fill weights replaced" in out.err and "is constant" not in out.err
    assert "-> OK" in out.out


def test_randomized_weights_are_seeded(tmp_path):
    model = onnx.load(str(_constant_fill_model(tmp_path / "fill.onnx")))
    (a, n), (b, _), (c, _) = (randomize_constant_weights(model, s) for s in (0, 0, 1))
    w = [numpy_helper.to_array(next(i for i in m.graph.initializer if i.name == "w")) for m in (a, b, c)]
    assert n == 1 and w[0].shape == (4, 3, 3, 3)
    np.testing.assert_array_equal(w[0], w[1])
    assert not np.array_equal(w[0], w[2])
    assert not any(node.op_type == "ConstantOfShape" for node in a.graph.node)


def test_random_weights_need_an_onnx_model(tmp_path, capsys):
    assert main(["run", str(tmp_path / "model.tar"), "--random-weights"]) == 2
    assert "need the .onnx model" in capsys.readouterr().err
