"""Low-precision inputs and outputs of CompiledGraph.run: ml_dtypes arrays in (float8, int4, int2),
the same types out, through an imported ONNX model and a built graph (tefuse on llvm vs ml_dtypes)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto as T, helper

import tefuse
from tefuse.errors import TefuseError
from tefuse.frontend.onnx import import_onnx
from tefuse.graph.ir import GraphBuilder
from tefuse.graph.lowbit import logical_dtype


def _cast_model(src, dst, n=8):
    g = helper.make_graph([helper.make_node("Cast", ["x"], ["y"], to=dst)], "cast",
                          [helper.make_tensor_value_info("x", src, [n])], [helper.make_tensor_value_info("y", dst, [n])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])


@pytest.mark.parametrize("name,src,dst", [
    ("int4", T.INT4, T.FLOAT), ("uint4", T.UINT4, T.INT32), ("int4", T.INT4, T.INT8),
    ("float8_e4m3fn", T.FLOAT8E4M3FN, T.FLOAT), ("float8_e5m2", T.FLOAT8E5M2, T.FLOAT16)])
def test_low_precision_input_in_its_ml_dtypes_type(name, src, dst, rng):
    t = getattr(ml_dtypes, name)
    info = ml_dtypes.iinfo(t) if "int" in name else None
    x = (rng.integers(info.min, info.max + 1, 8) if info else rng.standard_normal(8) * 8).astype(t)
    cg = tefuse.build(import_onnx(_cast_model(src, dst)), "llvm")
    (y,) = cg.run(x)
    want = x.astype(helper.tensor_dtype_to_np_dtype(dst))
    assert y.dtype == want.dtype
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("name,dst", [("int4", T.INT4), ("uint4", T.UINT4), ("int2", T.INT2),
                                      ("float8_e4m3fn", T.FLOAT8E4M3FN), ("float8_e5m2", T.FLOAT8E5M2)])
def test_low_precision_output_comes_back_typed(name, dst):
    x = np.array([-9.5, -3.7, -1.2, -0.5, 0.4, 1.5, 2.6, 300.0], np.float32)
    cg = tefuse.build(import_onnx(_cast_model(T.FLOAT, dst)), "llvm")
    (y,) = cg.run(x)
    t = getattr(ml_dtypes, name)
    assert y.dtype == t
    want = onnx.numpy_helper.saturate_cast(x, t) if name.startswith("float") else x.astype(t)
    np.testing.assert_array_equal(y.astype(np.float32), want.astype(np.float32))
    buf = np.zeros(8, t)  # out= takes a buffer of the same type
    assert cg.run(x, out=[buf])[0] is buf
    np.testing.assert_array_equal(buf.astype(np.float32), want.astype(np.float32))


def test_int4_identity_and_storage_cast_keep_their_own_types():
    """An output that reads an int4 input's storage as int8 is a node of its own: int8 out, while
    the identity output stays int4."""
    g = helper.make_graph([helper.make_node("Identity", ["x"], ["a"]),
                           helper.make_node("Cast", ["x"], ["b"], to=T.INT8)], "m",
                          [helper.make_tensor_value_info("x", T.INT4, [5])],
                          [helper.make_tensor_value_info("a", T.INT4, [5]), helper.make_tensor_value_info("b", T.INT8, [5])])
    graph = import_onnx(helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)]))
    assert [logical_dtype(o) for o in graph.outputs] == ["int4", "int8"]
    x = np.array([-8, -1, 0, 3, 7], ml_dtypes.int4)
    a, b = tefuse.build(graph, "llvm").run(x)
    assert a.dtype == ml_dtypes.int4 and b.dtype == np.int8
    np.testing.assert_array_equal(a.astype(np.int8), x.astype(np.int8))
    np.testing.assert_array_equal(b, x.astype(np.int8))


def test_builder_keeps_low_precision_inputs_and_constants_in_storage():
    b = GraphBuilder()
    x = b.input("x", (4,), "float8_e4m3fn")
    c = b.const(np.array([1.5, -2, 0.25, 448], ml_dtypes.float8_e4m3fn), name="c")
    assert (x.dtype, logical_dtype(x)) == ("uint8", "float8_e4m3fn")
    assert (c.dtype, logical_dtype(c)) == ("uint8", "float8_e4m3fn")
    s = b.op("add", b.op("fp_decode", x, format="float8_e4m3fn"), b.op("fp_decode", c, format="float8_e4m3fn"))
    cg = tefuse.build(b.build([s, x]), "llvm")
    xv = np.array([1, 2, -3, 0.5], ml_dtypes.float8_e4m3fn)
    y, back = cg.run(x=xv)
    np.testing.assert_array_equal(y, xv.astype(np.float32) + c.value.view(ml_dtypes.float8_e4m3fn).astype(np.float32))
    assert back.dtype == xv.dtype and back.tobytes() == xv.tobytes()


def test_wrong_type_for_a_low_precision_input_is_named():
    cg = tefuse.build(import_onnx(_cast_model(T.INT4, T.FLOAT, 4)), "llvm")
    with pytest.raises(TefuseError, match=r"input 'x': expected int4\[4\], got int8\[4\]"):
        cg.run(np.zeros(4, np.int8))
    with pytest.raises(TefuseError, match=r"out= buffer for 'y'"):
        cg.run(np.zeros(4, ml_dtypes.int4), out=[np.zeros(4, ml_dtypes.int4)])


def test_a_saved_artefact_keeps_the_low_precision_types(tmp_path):
    from tefuse.runtime import artifact

    cg = tefuse.build(import_onnx(_cast_model(T.INT4, T.FLOAT8E4M3FN, 6)), "llvm")
    artifact.save(cg, tmp_path / "m", as_directory=True)
    x = np.array([-8, -3, 0, 1, 5, 7], ml_dtypes.int4)
    (y,) = artifact.load(tmp_path / "m").run(x)
    assert y.dtype == ml_dtypes.float8_e4m3fn
    np.testing.assert_array_equal(y.astype(np.float32), x.astype(np.float32))
