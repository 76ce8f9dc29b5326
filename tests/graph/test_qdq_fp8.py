"""float8 QDQ models (QuantizeLinear / DequantizeLinear to float8e4m3fn or float8e5m2 around convs
and matmuls, per-channel weight scales, as TensorRT's explicit FP8 quantization writes them) built
on llvm with graph/qdq.py's float8 anchors: the products read the codes (ops/codes.py), counted in
the prepared graph, against onnxruntime's CPU run of the same model with its graph optimizations
off: onnxruntime 1.32's optimizer drops a ReLU before a float8 QuantizeLinear (a rule for uint8,
where the zero point clips what the ReLU would), which changes its answer."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto as T, helper, numpy_helper

import tefuse
from tefuse.driver import prepare_graph
from tefuse.frontend.onnx import import_onnx

pytest.importorskip("onnxruntime")
from tests.graph.test_qdq import onnx_semantics  # noqa: E402 - onnxruntime first

FORMATS = {"float8_e4m3fn": (T.FLOAT8E4M3FN, ml_dtypes.float8_e4m3fn, 448.0),
           "float8_e5m2": (T.FLOAT8E5M2, ml_dtypes.float8_e5m2, 57344.0)}


def _fp8_net(fmt: str, rng, kind: str) -> tuple[onnx.ModelProto, tuple]:
    """x -> Q/DQ -> conv (or matmul) over DQ'd fp8 weights (+ bias) -> ReLU -> Q/DQ -> conv -> y."""
    onnx_t, np_t, fmax = FORMATS[fmt]
    inits, nodes = [], []

    def const(name, value):
        inits.append(numpy_helper.from_array(value, name))

    def qdq(src, dst, scale):
        const(f"{dst}_s", np.array(scale, np.float32))
        inits.append(helper.make_tensor(f"{dst}_z", onnx_t, [], [0]))
        nodes.append(helper.make_node("QuantizeLinear", [src, f"{dst}_s", f"{dst}_z"], [f"{dst}_q"]))
        nodes.append(helper.make_node("DequantizeLinear", [f"{dst}_q", f"{dst}_s", f"{dst}_z"], [dst]))

    def weight(name, w, axis=0):
        """w's codes scaled per output channel (`axis`), dequantized."""
        s = (np.abs(np.moveaxis(w, axis, 0)).reshape(w.shape[axis], -1).max(axis=1) / fmax * 2).astype(np.float32)
        shape = [1] * w.ndim
        shape[axis] = -1
        inits.append(numpy_helper.from_array((w / s.reshape(shape)).astype(np_t), f"{name}_q"))
        const(f"{name}_s", s)
        inits.append(helper.make_tensor(f"{name}_z", onnx_t, [w.shape[axis]], [0] * w.shape[axis]))
        nodes.append(helper.make_node("DequantizeLinear", [f"{name}_q", f"{name}_s", f"{name}_z"], [name], axis=axis))

    if kind == "conv":
        x_shape, y_shape = (2, 16, 8, 8), (2, 32, 8, 8)
        qdq("x", "xd", 0.02)
        weight("w1", rng.standard_normal((32, 16, 3, 3)).astype(np.float32) * 0.2)
        const("b1", rng.standard_normal(32).astype(np.float32) * 0.1)
        nodes.append(helper.make_node("Conv", ["xd", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("Relu", ["c1"], ["r1"]))
        qdq("r1", "rd", 0.05)
        weight("w2", rng.standard_normal((32, 32, 1, 1)).astype(np.float32) * 0.2)
        nodes.append(helper.make_node("Conv", ["rd", "w2"], ["y"]))
        count = 2
    else:  # MatMul's weight [K, N]: its output channels on axis 1
        x_shape, y_shape = (37, 64), (37, 48)
        qdq("x", "xd", 0.02)
        weight("w1", rng.standard_normal((64, 48)).astype(np.float32) * 0.2, axis=1)
        nodes.append(helper.make_node("MatMul", ["xd", "w1"], ["y"]))
        count = 1
    g = helper.make_graph(nodes, "fp8", [helper.make_tensor_value_info("x", T.FLOAT, x_shape)],
                          [helper.make_tensor_value_info("y", T.FLOAT, y_shape)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)], ir_version=9), (x_shape, count)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("kind", ["conv", "matmul"])
def test_fp8_qdq_model_runs_on_float8_anchors_and_matches_onnxruntime(fmt, kind):
    rng = np.random.default_rng(0)
    m, (x_shape, count) = _fp8_net(fmt, rng, kind)
    graph = import_onnx(m)
    prepared = prepare_graph(graph, "llvm")
    anchors = [n for n in prepared.nodes if n.is_op and n.attrs.get("codes")]
    assert len(anchors) == count and {a.attrs["codes"] for a in anchors} == {fmt}
    assert all(a.inputs[0].dtype == a.inputs[1].dtype == "uint8" and a.dtype == "float32" for a in anchors)
    x = rng.standard_normal(x_shape).astype(np.float32)
    want = onnx_semantics(m, x)
    got = tefuse.build(graph, "llvm").run(x)[0]
    # the same products of the same codes, summed in float32 in another order
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()
    plain = tefuse.build(graph, "llvm", qdq=False).run(x)[0]
    np.testing.assert_allclose(got, plain, rtol=0, atol=1e-5 * np.abs(want).max())


def test_fast_accumulation_marks_the_float8_products_and_keeps_their_values():
    """fp8_fast_accum: every float8 anchor may sum in the tensor cores' accumulator
    (ops/codes.fast_accumulation); on llvm the model's outputs are the same."""
    model, (x_shape, count) = _fp8_net("float8_e4m3fn", np.random.default_rng(0), "conv")
    graph = import_onnx(model)
    marked = [n for n in prepare_graph(graph, "llvm", fp8_fast_accum=True).nodes if n.attrs.get("codes")]
    assert len(marked) == count and all(n.attrs["fast_accum"] for n in marked)
    assert not any(n.attrs.get("fast_accum") for n in prepare_graph(graph, "llvm").nodes)
    x = np.random.default_rng(1).standard_normal(x_shape).astype(np.float32)
    np.testing.assert_array_equal(tefuse.build(graph, "llvm", fp8_fast_accum=True).run(x=x)[0],
                                  tefuse.build(graph, "llvm").run(x=x)[0])


def test_fast_accumulation_without_a_float8_product_says_so(caplog):
    import logging

    model, _ = _fp8_net("float8_e4m3fn", np.random.default_rng(0), "conv")
    graph = import_onnx(model)
    b = tefuse.GraphBuilder()
    float_graph = b.build(b.relu(b.input("x", (4, 8))))
    with caplog.at_level(logging.WARNING, logger="tefuse.driver"):
        prepare_graph(graph, "llvm", fp8_fast_accum=True)
        assert not caplog.records
        prepare_graph(float_graph, "llvm", precision="fp16", fp8_fast_accum=True)
    (rec,) = caplog.records
    assert "no float8 product" in rec.getMessage() and "fp16" in rec.getMessage()
