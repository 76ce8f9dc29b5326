"""ONNX import edges the conformance suite found: specialization on shape-like inputs, low-precision
values, integer Div/Pow/Clip, non-tensor inputs, old opsets (tefuse on llvm vs numpy)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto as T, helper

import tefuse
from tefuse.errors import ModelImportError
from tefuse.frontend.onnx import import_onnx
from tefuse.frontend.onnx.backend import TefuseBackend


def _model(nodes, inputs, outputs, opset=13):
    g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                          [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def test_shape_like_input_is_named_and_specialized(rng):
    m = _model([helper.make_node("Reshape", ["x", "shape"], ["y"])],
               [("x", T.FLOAT, [2, 6]), ("shape", T.INT64, [2])], [("y", T.FLOAT, ["a", "b"])])
    with pytest.raises(ModelImportError) as e:
        import_onnx(m)
    assert e.value.constant_inputs == ["shape"]
    assert "model input" in str(e.value) and "constant_inputs" in str(e.value)
    g = import_onnx(m, constant_inputs={"shape": np.array([3, 4])})
    assert [i.name for i in g.inputs] == ["x"]
    rep = TefuseBackend.prepare(m)
    x = rng.standard_normal((2, 6)).astype(np.float32)
    for shape in ([3, 4], [4, 3], [3, 4]):
        np.testing.assert_array_equal(rep.run([x, np.array(shape, np.int64)])[0], x.reshape(shape))
    assert len(rep._compiled) == 2  # one build per distinct value


def test_float8_value_reaches_only_cast():
    m = _model([helper.make_node("Cast", ["x"], ["h"], to=T.FLOAT8E4M3FN),
                helper.make_node("Add", ["h", "h"], ["y"])],
               [("x", T.FLOAT, [4])], [("y", T.FLOAT8E4M3FN, [4])], opset=19)
    with pytest.raises(ModelImportError, match=r"Add.*holds float8_e4m3fn values, which only Cast"):
        import_onnx(m)


def test_float8_round_trip_through_the_backend():
    m = _model([helper.make_node("Cast", ["x"], ["h"], to=T.FLOAT8E5M2),
                helper.make_node("Cast", ["h"], ["y"], to=T.FLOAT16)],
               [("x", T.FLOAT, [6])], [("h", T.FLOAT8E5M2, [6]), ("y", T.FLOAT16, [6])], opset=19)
    x = np.array([0.3, -1e6, np.inf, np.nan, 1e-9, 57344], np.float32)
    h, y = TefuseBackend.prepare(m).run([x])
    want = onnx.numpy_helper.saturate_cast(x, ml_dtypes.float8_e5m2)
    assert h.dtype == ml_dtypes.float8_e5m2
    np.testing.assert_array_equal(h.view(np.uint8)[~np.isnan(x)], want.view(np.uint8)[~np.isnan(x)])
    np.testing.assert_array_equal(y, want.astype(np.float16))


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "uint32"])
def test_integer_div_truncates_and_never_traps(dtype):
    """C's truncation (ONNX's test_div_int32_trunc), and numpy's answers where C traps: x / 0 is
    0, INT_MIN / -1 wraps to INT_MIN."""
    info = np.iinfo(dtype)
    pairs = [(7, 2), (-7, 2), (7, -2), (-7, -2), (5, 0), (int(info.min), -1), (int(info.max), 1), (0, 3)]
    if dtype.startswith("uint"):
        pairs = [(min(abs(p), int(info.max)), abs(q)) for p, q in pairs]

    def c_div(p, q):
        if q == 0:
            return 0
        r = abs(p) // abs(q) * (1 if (p >= 0) == (q > 0) else -1)
        return (r - int(info.min)) % (int(info.max) - int(info.min) + 1) + int(info.min)  # wrap

    a = np.array([p for p, _ in pairs], dtype)
    b = np.array([q for _, q in pairs], dtype)
    t = helper.np_dtype_to_tensor_dtype(a.dtype)
    m = _model([helper.make_node("Div", ["a", "b"], ["y"])], [("a", t, [8]), ("b", t, [8])], [("y", t, [8])])
    got = TefuseBackend.prepare(m).run([a, b])[0]
    np.testing.assert_array_equal(got, np.array([c_div(int(p), int(q)) for p, q in zip(a, b)], dtype))


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8"])
def test_integer_pow_matches_numpy_below_256(dtype, rng):
    a = rng.integers(0 if dtype.startswith("u") else -9, 10, 200).astype(dtype)
    e = rng.integers(0, 256, 200).astype(dtype)
    m = _model([helper.make_node("Pow", ["a", "e"], ["y"])],
               [("a", helper.np_dtype_to_tensor_dtype(a.dtype), [200]), ("e", helper.np_dtype_to_tensor_dtype(a.dtype), [200])],
               [("y", helper.np_dtype_to_tensor_dtype(a.dtype), [200])])
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(TefuseBackend.prepare(m).run([a, e])[0], np.power(a, e))


def test_integer_clip_with_min_above_max_gives_max():
    x = np.array([-100, -3, 0, 4, 100], np.int8)
    m = _model([helper.make_node("Clip", ["x", "lo", "hi"], ["y"])],
               [("x", T.INT8, [5]), ("lo", T.INT8, []), ("hi", T.INT8, [])], [("y", T.INT8, [5])])
    got = TefuseBackend.prepare(m).run([x, np.int8(5), np.int8(2)])[0]
    np.testing.assert_array_equal(got, np.minimum(np.maximum(x, 5), 2))


def test_size_is_zero_d():
    m = _model([helper.make_node("Size", ["x"], ["n"])], [("x", T.FLOAT, [3, 4])], [("n", T.INT64, [])])
    n = tefuse.build(import_onnx(m), "llvm").run(np.zeros((3, 4), np.float32))[0]
    assert n.shape == () and n == 12


@pytest.mark.parametrize("kind,make", [
    ("a sequence", lambda: helper.make_tensor_sequence_value_info("x", T.FLOAT, [2])),
    ("an optional", lambda: helper.make_value_info("x", helper.make_optional_type_proto(
        helper.make_tensor_type_proto(T.FLOAT, [2])))),
    ("a string tensor", lambda: helper.make_tensor_value_info("x", T.STRING, [2])),
])
def test_non_tensor_input_is_refused_in_one_line_naming_the_node(kind, make):
    g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"], name="the_identity")], "m", [make()],
                          [helper.make_tensor_value_info("y", T.FLOAT, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)])
    with pytest.raises(ModelImportError) as e:
        import_onnx(m, check=False)
    first = str(e.value).splitlines()[1]
    assert "the_identity" in first and f"is {kind}" in first


def test_old_opset_is_converted_not_refused(rng):
    m = _model([helper.make_node("Relu", ["x"], ["y"])], [("x", T.FLOAT, [2, 3])], [("y", T.FLOAT, [2, 3])], opset=6)
    m.ir_version = 3
    x = rng.standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_array_equal(TefuseBackend.prepare(m).run([x])[0], np.maximum(x, 0))


@pytest.mark.parametrize("mode", ["edge", "reflect", "wrap"])
def test_pad_modes(mode, rng):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    pads = np.array([0, 1, 2, 0, 2, 1], np.int64)
    m = _model([helper.make_node("Pad", ["x", "pads"], ["y"], mode=mode)],
               [("x", T.FLOAT, [2, 3, 4]), ("pads", T.INT64, [6])], [("y", T.FLOAT, ["a", "b", "c"])])
    got = TefuseBackend.prepare(m).run([x, pads])[0]
    np.testing.assert_array_equal(got, np.pad(x, [(0, 0), (1, 2), (2, 1)], mode={"edge": "edge", "reflect": "reflect",
                                                                               "wrap": "wrap"}[mode]))


def test_an_undefined_node_input_names_the_node_and_the_input():
    m = _model([helper.make_node("Conv", ["x", "w"], ["c"], name="conv1"),
                helper.make_node("Relu", ["c"], ["y"], name="relu1")],
               [("x", T.FLOAT, [1, 3, 4, 4])], [("y", T.FLOAT, [1, 4, 4, 4])])
    with pytest.raises(ModelImportError) as e:
        import_onnx(m)
    msg = str(e.value)
    assert "node 'conv1' (Conv, opset 13): input 'w' is not defined" in msg
    assert "missing initializer" in msg and "topologically" not in msg
    assert [p.node for p in e.value.problems] == ["conv1"]


def test_a_node_input_defined_later_is_still_an_ordering_problem():
    m = _model([helper.make_node("Relu", ["c"], ["y"], name="relu1"),
                helper.make_node("Neg", ["x"], ["c"], name="neg1")],
               [("x", T.FLOAT, [2])], [("y", T.FLOAT, [2])])
    with pytest.raises(ModelImportError, match="topologically sorted"):
        import_onnx(m)


@pytest.mark.parametrize("index, axis", [(4, 1), (-5, 1), (2, 0), (-3, -2)])
def test_a_gather_index_out_of_range_names_the_node_index_and_axis_size(index, axis):
    idx = helper.make_tensor("idx", T.INT64, [], [index])
    g = helper.make_graph([helper.make_node("Gather", ["x", "idx"], ["y"], name="pick", axis=axis)], "m",
                          [helper.make_tensor_value_info("x", T.FLOAT, [2, 4])],
                          [helper.make_tensor_value_info("y", T.FLOAT, None)], [idx])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(ModelImportError) as e:
        import_onnx(m, check=False)
    size = 4 if axis in (1, -1) else 2
    assert (f"node 'pick' (Gather, opset 13): index {index} is out of range for axis {axis % 2} of size {size}"
            in str(e.value)), str(e.value)
    assert "reshape" not in str(e.value)


def test_a_negative_gather_index_counts_from_the_end(rng):
    idx = helper.make_tensor("idx", T.INT64, [2], [-1, 0])
    g = helper.make_graph([helper.make_node("Gather", ["x", "idx"], ["y"], axis=1)], "m",
                          [helper.make_tensor_value_info("x", T.FLOAT, [2, 4])],
                          [helper.make_tensor_value_info("y", T.FLOAT, [2, 2])], [idx])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    x = rng.standard_normal((2, 4)).astype(np.float32)
    np.testing.assert_array_equal(TefuseBackend.prepare(m).run([x])[0], x[:, [-1, 0]])
