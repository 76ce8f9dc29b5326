"""QDQ models (onnxruntime's quantize_static, QDQ format, per-channel int8 weights) built on llvm
with graph/qdq.py's int8 anchors: against onnxruntime's CPU run of the same model, the anchors
counted in the prepared graph, and the activations crossing kernels int8 where the float path's are
float32."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T, helper, numpy_helper

import tefuse
from tefuse.driver import prepare_graph
from tefuse.frontend.onnx import import_onnx
from tefuse.graph.ir import INPUT

ort = pytest.importorskip("onnxruntime")
quantization = pytest.importorskip("onnxruntime.quantization")


def _conv_net(rng) -> onnx.ModelProto:
    """conv-ReLU, conv, residual add, ReLU (the relus fold into quantize ranges)."""
    w1, b1 = rng.standard_normal((8, 3, 3, 3)) * 0.3, rng.standard_normal(8) * 0.1
    w2, b2 = rng.standard_normal((8, 8, 3, 3)) * 0.2, rng.standard_normal(8) * 0.1
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Conv", ["r1", "w3"], ["s"], strides=[2, 2]),
             helper.make_node("Add", ["c2", "s"], ["a"]),
             helper.make_node("Relu", ["a"], ["y"])]
    inits = {"w1": w1, "b1": b1, "w2": w2, "b2": b2, "w3": rng.standard_normal((8, 8, 1, 1)) * 0.3}
    return _model(nodes, (1, 3, 8, 8), (1, 8, 4, 4), inits)


def _pooled_net(rng) -> onnx.ModelProto:
    """A stem: conv-ReLU, 3x3/2 max pool, conv (the pool runs on the codes: graph/pool_codes.py)."""
    inits = {"w1": rng.standard_normal((16, 3, 3, 3)) * 0.3, "b1": rng.standard_normal(16) * 0.1,
             "w2": rng.standard_normal((8, 16, 1, 1)) * 0.3}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("MaxPool", ["r1"], ["p"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["p", "w2"], ["y"])]
    return _model(nodes, (1, 3, 9, 9), (1, 8, 5, 5), inits)


def _mlp(rng) -> onnx.ModelProto:
    inits = {"w1": rng.standard_normal((16, 32)) * 0.3, "b1": rng.standard_normal(32) * 0.1,
             "w2": rng.standard_normal((32, 8)) * 0.2, "b2": rng.standard_normal(8) * 0.1}
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["m1"]), helper.make_node("Add", ["m1", "b1"], ["a1"]),
             helper.make_node("Relu", ["a1"], ["r1"]), helper.make_node("MatMul", ["r1", "w2"], ["m2"]),
             helper.make_node("Add", ["m2", "b2"], ["y"])]
    return _model(nodes, (4, 16), (4, 8), inits)


def _model(nodes, x_shape, y_shape, inits) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "net", [helper.make_tensor_value_info("x", T.FLOAT, x_shape)],
                          [helper.make_tensor_value_info("y", T.FLOAT, y_shape)],
                          [numpy_helper.from_array(v.astype(np.float32), k) for k, v in inits.items()])
    # IR 8 (opset 17's): an older onnxruntime refuses the newest IR that onnx.helper writes
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _quantized(model: onnx.ModelProto, x_shape, tmp_path, rng, activations: str = "QInt8") -> onnx.ModelProto:
    class Reader(quantization.CalibrationDataReader):
        def __init__(self):
            self.feeds = iter([{"x": rng.standard_normal(x_shape).astype(np.float32)} for _ in range(4)])

        def get_next(self):
            return next(self.feeds, None)

    src, dst = tmp_path / "f.onnx", tmp_path / "q.onnx"
    onnx.save(model, src)
    quantization.quantize_static(str(src), str(dst), Reader(), quant_format=quantization.QuantFormat.QDQ,
                                 per_channel=True, activation_type=getattr(quantization.QuantType, activations))
    return onnx.load(dst)


def onnx_semantics(m: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    """onnxruntime's CPU outputs with its graph optimizations off: the model's own float ops
    between its QuantizeLinear / DequantizeLinear, as ONNX defines them (equal to onnx.reference's).
    Optimized, onnxruntime runs int8 QDQ chains on integer kernels of its own, which on x86 CPUs
    without VNNI saturate 16-bit pair sums: 14 output steps off for the mlp below on such a CPU."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def _crossing_dtypes(cg) -> set[str]:
    """dtypes of the tensors one kernel writes and another reads."""
    read = {id(p) for k in cg.kernels for p in k.params}
    return {o.dtype for k in cg.kernels for o in k.outputs if id(o) in read and o.op != INPUT}


@pytest.mark.parametrize("net,x_shape,anchor,count,activations", [
    (_conv_net, (1, 3, 8, 8), "conv2d", 3, "QInt8"), (_mlp, (4, 16), "matmul", 2, "QInt8"),
    (_conv_net, (1, 3, 8, 8), "conv2d", 3, "QUInt8"), (_pooled_net, (1, 3, 9, 9), "conv2d", 2, "QInt8"),
    (_pooled_net, (1, 3, 9, 9), "conv2d", 2, "QUInt8")],
    ids=["convnet", "mlp", "convnet-uint8-activations", "pooled", "pooled-uint8-activations"])
def test_qdq_model_runs_on_int8_anchors_and_matches_onnxruntime(net, x_shape, anchor, count, activations, tmp_path):
    rng = np.random.default_rng(0)
    m = _quantized(net(rng), x_shape, tmp_path, rng, activations)
    graph = import_onnx(m)
    prepared = prepare_graph(graph, "llvm")
    anchors = [n for n in prepared.nodes if n.op == anchor]
    assert len(anchors) == count
    assert all(a.inputs[0].dtype == a.inputs[1].dtype == "int8" and a.dtype == "int32" for a in anchors)
    assert not any(n.op == anchor for n in prepare_graph(graph, "llvm", qdq=False).nodes if n.dtype == "int32")

    y_scale = float(numpy_helper.to_array(next(i for i in m.graph.initializer if i.name == "y_scale")))
    x = rng.standard_normal(x_shape).astype(np.float32)
    want = onnx_semantics(m, x)
    quant, plain = tefuse.build(graph, "llvm"), tefuse.build(graph, "llvm", qdq=False)
    for cg in (quant, plain):
        y = cg.run(x)[0]
        assert np.abs(y - want).max() <= y_scale * 1.0001  # within one output quantization step
    assert quant.num_kernels <= plain.num_kernels
    # the int8 anchors read the previous layer's quantized output, and the residual add its
    # projection shortcut's codes (the shortcut conv's kernel stores them): no float32 activation
    # crosses between kernels, as it does where the convs compute in float32
    q8 = "uint8" if activations == "QUInt8" else "int8"
    assert q8 in _crossing_dtypes(quant) <= {"int8", "uint8"} and "float32" in _crossing_dtypes(plain)
    pools = [n for n in prepared.nodes if n.op == "max_pool2d"]
    assert len(pools) == (net is _pooled_net) and all(n.dtype == q8 for n in pools)  # on the codes


def test_constant_dequantize_folds_once(rng):
    """A dequantized weight the pass does not take (a per-tensor uint8 one under an Add) becomes its
    float constant at build: no kernel dequantizes it each run."""
    wq = rng.integers(0, 255, (4,)).astype(np.uint8)
    g = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["wq", "s", "z"], ["w"]), helper.make_node("Add", ["x", "w"], ["y"])],
        "m", [helper.make_tensor_value_info("x", T.FLOAT, [4])], [helper.make_tensor_value_info("y", T.FLOAT, [4])],
        [numpy_helper.from_array(wq, "wq"), numpy_helper.from_array(np.array(0.5, np.float32), "s"),
         numpy_helper.from_array(np.array(7, np.uint8), "z")])
    graph = import_onnx(helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)]))
    assert [n.op for n in graph.nodes if n.is_op] == ["dequantize_linear", "add"]
    assert [n.op for n in prepare_graph(graph, "llvm").nodes if n.is_op] == ["add"]
    x = rng.standard_normal(4).astype(np.float32)
    np.testing.assert_array_equal(tefuse.build(graph, "llvm").run(x)[0], x + (wq.astype(np.float32) - 7) * 0.5)
