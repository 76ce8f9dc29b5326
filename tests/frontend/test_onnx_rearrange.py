"""ONNX Expand, Tile, DepthToSpace, SpaceToDepth, Trilu, CumSum and Range through import_onnx,
against onnxruntime; inputs that must be constants and Range's data-dependent shape refused by
name."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import tefuse
from tefuse.errors import ModelImportError
from tefuse.frontend.onnx import import_onnx

ort = pytest.importorskip("onnxruntime")


def one_node(op, x: np.ndarray, consts: dict | None = None, opset=14, name="the_node", **attrs):
    """A model of one `op` node on input x and constant inputs `consts` (name -> array, in order;
    None leaves an optional input out)."""
    consts = consts or {}
    inputs = ["x"] + [k if v is not None else "" for k, v in consts.items()]
    inits = [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items() if v is not None]
    et = helper.np_dtype_to_tensor_dtype(x.dtype)
    g = helper.make_graph([helper.make_node(op, inputs, ["y"], name=name, **attrs)], "g",
                          [helper.make_tensor_value_info("x", et, list(x.shape))],
                          [helper.make_tensor_value_info("y", et, None)], inits)
    return onnx.shape_inference.infer_shapes(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]))


def versus_ort(model, x):
    got = tefuse.build(import_onnx(model), "llvm").run(x)[0]
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    return got


@pytest.mark.parametrize("src,shape", [((3, 1), (2, 1, 4)), ((2, 3), (3,)), ((1, 4), (1, 1)), ((2, 1, 3), (2, 5, 1))])
def test_expand(rng, src, shape):
    x = rng.standard_normal(src).astype(np.float32)
    versus_ort(one_node("Expand", x, {"shape": np.array(shape, np.int64)}, opset=13), x)


@pytest.mark.parametrize("reps", [(2, 1, 3), (1, 1, 1)])
def test_tile(rng, reps):
    x = rng.integers(0, 9, (2, 3, 1)).astype(np.int64)
    versus_ort(one_node("Tile", x, {"repeats": np.array(reps, np.int64)}, opset=13), x)


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space(rng, mode):
    x = rng.standard_normal((1, 8, 2, 3)).astype(np.float32)
    versus_ort(one_node("DepthToSpace", x, blocksize=2, mode=mode, opset=13), x)


def test_space_to_depth(rng):
    x = rng.standard_normal((2, 3, 4, 6)).astype(np.float32)
    versus_ort(one_node("SpaceToDepth", x, blocksize=2, opset=13), x)


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [None, 2, -1, -8, 11])
def test_trilu(rng, upper, k):
    x = rng.standard_normal((2, 4, 5)).astype(np.float32)
    consts = {"k": None if k is None else np.array(k, np.int64)}
    versus_ort(one_node("Trilu", x, consts, upper=upper), x)


@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
def test_cumsum(rng, exclusive, reverse):
    x = rng.standard_normal((3, 7)).astype(np.float32)
    versus_ort(one_node("CumSum", x, {"axis": np.array(-1, np.int32)}, exclusive=exclusive, reverse=reverse), x)


def test_cumsum_of_an_attention_mask_gives_positions(rng):
    """Transformers number tokens by cumsum(mask) - 1 (int64), as one kernel with the subtraction."""
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], np.int64)
    nodes = [helper.make_node("CumSum", ["x", "ax"], ["c"]), helper.make_node("Sub", ["c", "one"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.INT64, [2, 5])],
                          [helper.make_tensor_value_info("y", onnx.TensorProto.INT64, None)],
                          [numpy_helper.from_array(np.array(1, np.int64), "ax"),
                           numpy_helper.from_array(np.array(1, np.int64), "one")])
    m = onnx.shape_inference.infer_shapes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)]))
    cg = tefuse.build(import_onnx(m), "llvm")
    assert cg.num_kernels == 1
    np.testing.assert_array_equal(cg.run(mask)[0], np.cumsum(mask, axis=1) - 1)


def test_constant_range_folds_at_import():
    nodes = [helper.make_node("Range", ["s", "l", "d"], ["r"]), helper.make_node("Add", ["x", "r"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 4])],
                          [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.array(v, np.float32), k) for k, v in
                           (("s", 1.0), ("l", 3.0), ("d", 0.5))])
    graph = import_onnx(onnx.shape_inference.infer_shapes(helper.make_model(g, opset_imports=[
        helper.make_opsetid("", 13)])))
    assert [n.op for n in graph.nodes if n.is_op] == ["add"]
    y = tefuse.build(graph, "llvm").run(np.zeros((2, 4), np.float32))[0]
    np.testing.assert_array_equal(y, np.tile(np.arange(1, 3, 0.5, dtype=np.float32), (2, 1)))


def range_model(limit_from_input: bool):
    """Range(0, limit, 1) where limit is a model input, or computed from one (x's max)."""
    if limit_from_input:
        nodes, inputs = [helper.make_node("Range", ["s", "x", "d"], ["y"], name="the_range")], ["x"]
    else:
        nodes = [helper.make_node("ReduceMax", ["x"], ["m"], keepdims=0),
                 helper.make_node("Range", ["s", "m", "d"], ["y"], name="the_range")]
        inputs = ["x"]
    shape = [] if limit_from_input else [3]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(i, onnx.TensorProto.INT64, shape) for i in inputs],
                          [helper.make_tensor_value_info("y", onnx.TensorProto.INT64, ["n"])],
                          [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in (("s", 0), ("d", 1))])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def test_range_of_a_run_time_value_is_refused_in_one_line():
    with pytest.raises(ModelImportError) as ei:
        import_onnx(range_model(limit_from_input=False))
    (problem,) = ei.value.problems
    assert problem.node == "the_range" and "\n" not in problem.reason
    assert "output length depends on limit 'm', computed at run time: a data-dependent shape" in problem.reason


def test_range_of_a_model_input_can_be_specialized():
    with pytest.raises(ModelImportError, match="limit 'x', a model input .*constant_inputs") as ei:
        import_onnx(range_model(limit_from_input=True))
    assert ei.value.constant_inputs == ["x"]
    graph = import_onnx(range_model(limit_from_input=True), constant_inputs={"x": np.array(4, np.int64)})
    assert [n.op for n in graph.nodes if n.is_op] == []  # the whole model folded


@pytest.mark.parametrize("op,consts,attrs,msg", [
    ("Expand", {"shape": "run-time"}, {}, "shape 'shape' must be a constant"),
    ("Tile", {"repeats": "run-time"}, {}, "repeats 'repeats' must be a constant"),
    ("Trilu", {"k": "run-time"}, {}, "k 'k' must be a constant"),
    ("CumSum", {"axis": "run-time"}, {}, "axis 'axis' must be a constant"),
    ("Trilu", {"k": np.array([1, 2], np.int64)}, {}, r"k must be a single integer, got shape \[2\]"),
    ("Expand", {"shape": np.array([4], np.int64)}, {},
     r"\(2, 3\), \(4,\) of expand's input and shape \[4\] do not broadcast"),
    ("DepthToSpace", {}, {}, "blocksize is required"),
    ("DepthToSpace", {}, {"blocksize": 2, "mode": "XYZ"}, "mode='XYZ'"),
])
def test_refusals_name_the_node(op, consts, attrs, msg):
    x = np.zeros((2, 3), np.float32) if op != "DepthToSpace" else np.zeros((1, 4, 2, 2), np.float32)
    runtime = [k for k, v in consts.items() if isinstance(v, str)]
    inits = {k: v for k, v in consts.items() if not isinstance(v, str)}
    inputs = ["x"] + list(consts)
    et = onnx.TensorProto.FLOAT
    vis = [helper.make_tensor_value_info("x", et, list(x.shape))]
    vis += [helper.make_tensor_value_info(k, onnx.TensorProto.INT64, [1]) for k in runtime]
    g = helper.make_graph([helper.make_node(op, inputs, ["y"], name="the_node", **attrs)], "g", vis,
                          [helper.make_tensor_value_info("y", et, None)],
                          [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    with pytest.raises(ModelImportError, match=f"'the_node' \\({op}, opset 14\\): .*{msg}"):
        import_onnx(m, check=False)
