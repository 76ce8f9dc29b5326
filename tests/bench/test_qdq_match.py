"""The QDQ-against-onnxruntime bench: steps counted from the output's scale, and a small net
quantized by onnxruntime and built on llvm within one output step of onnxruntime's ONNX semantics."""
import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tefuse.bench import qdq_match

pytest.importorskip("onnxruntime.quantization")


def test_step_stats_read_whole_steps_through_float_rounding():
    s = qdq_match.step_stats([0.0, 1.0000004, 2.9999996, 1.0])
    assert (s.worst, s.mean_batch_worst, s.within_one_step) == (3.0, 1.25, 0.75)
    with pytest.raises(ValueError):
        qdq_match.step_stats([])


def _net(rng, batch: int) -> onnx.ModelProto:
    """conv 16x16/16 -> ReLU -> global average pool -> flatten -> Gemm: 224x224 images to 10 logits."""
    inits = [numpy_helper.from_array((rng.standard_normal(s) * k).astype(np.float32), n) for n, s, k in (
        ("w", (8, 3, 16, 16), 0.05), ("b", (8,), 0.1), ("fc", (10, 8), 0.5), ("fcb", (10,), 0.1))]
    nodes = [helper.make_node("Conv", ["input", "w", "b"], ["c"], strides=[16, 16]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["p"]),
             helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "fc", "fcb"], ["logits"], transB=1)]
    g = helper.make_graph(nodes, "net", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 3, 224, 224])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, 10])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_a_small_quantized_net_on_llvm_lies_within_one_output_step(tmp_path):
    src = tmp_path / "f.onnx"
    onnx.save(_net(np.random.default_rng(0), 2), src)
    path = qdq_match.quantize(src, tmp_path / "q.onnx", batch=2, batches=2)
    model = onnx.load(str(path))
    step = qdq_match.output_step(model)
    (dq,) = [n for n in model.graph.node if n.output[0] == "logits"]
    assert dq.op_type == "DequantizeLinear" and step > 0
    row = qdq_match.match_case("net", path, "llvm", inputs=6, batch=2)
    assert row.inputs == 6 and row.kernels >= 1 and set(row.pairs) == set(qdq_match.PAIRS)
    assert row.pairs["tefuse_vs_onnx"]["worst"] <= 1.0 and row.top1_agreement == 1.0
    out = qdq_match.report([row], "python -m tefuse.bench.qdq_match --models net")
    assert json.loads(json.dumps(out))["summary"]["net"]["tefuse_vs_onnx"] == row.pairs["tefuse_vs_onnx"]["worst"]


def test_an_output_that_is_not_dequantized_has_no_step():
    with pytest.raises(ValueError, match="not a DequantizeLinear"):
        qdq_match.output_step(_net(np.random.default_rng(0), 1))
