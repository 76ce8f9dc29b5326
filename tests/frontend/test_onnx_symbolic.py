import onnx
import pytest
from onnx import TensorProto, helper

from tefuse.errors import DynamicShapeError
from tefuse.frontend.onnx.symbolic import symbolic_input_shapes
from tefuse.graph.dims import bind_dims, parse_dynamic


def _encoder_inputs() -> onnx.ModelProto:
    """q and k share named dims N and S; v's batch is -1 (unnamed); w is an initializer."""
    q = helper.make_tensor_value_info("q", TensorProto.FLOAT, ["N", "S", 8])
    k = helper.make_tensor_value_info("k", TensorProto.FLOAT, ["N", "S", 8])
    v = helper.make_tensor_value_info("v", TensorProto.FLOAT, [-1, 8])
    w = helper.make_tensor("w", TensorProto.FLOAT, [8], [0.0] * 8)
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", "S", 8])
    node = helper.make_node("Add", ["q", "k"], ["y"])
    g = helper.make_graph([node], "g", [q, k, v, helper.make_tensor_value_info("w", TensorProto.FLOAT, [8])],
                          [out], initializer=[w])
    return helper.make_model(g)


def test_named_dims_kept_and_unnamed_ones_get_their_own_name():
    shapes = symbolic_input_shapes(_encoder_inputs())
    assert shapes == {"q": ("N", "S", 8), "k": ("N", "S", 8), "v": ("v:0", 8)}


def test_shared_name_ties_inputs_at_run_time():
    specs = symbolic_input_shapes(_encoder_inputs())
    ranges = parse_dynamic(["N=1:4:16", "S=1:32:128"])
    got = bind_dims(specs, {"q": (2, 5, 8), "k": (2, 5, 8), "v": (7, 8)}, ranges)
    assert got == {"N": 2, "S": 5, "v:0": 7}
    with pytest.raises(DynamicShapeError, match="dim 'S'"):
        bind_dims(specs, {"q": (2, 5, 8), "k": (2, 6, 8), "v": (7, 8)}, ranges)
    with pytest.raises(DynamicShapeError, match="outside its range 1:32:128"):
        bind_dims(specs, {"q": (2, 129, 8), "k": (2, 129, 8), "v": (7, 8)}, ranges)
