"""Small ONNX models for the CLI tests (several kernels, several inputs, a symbolic batch)."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def small_cnn(path, batch="1", opset=13, widths=(4, 6)):
    """conv+relu -> max pool -> conv+relu -> global average pool -> flatten -> gemm -> softmax:
    a few kernels. `batch` is a number, or a name for a symbolic batch dim; `widths`: the convs'
    output channels."""
    rng = np.random.default_rng(0)
    c1, c2 = widths
    w1 = numpy_helper.from_array(rng.standard_normal((c1, 3, 3, 3)).astype("float32") / 3, "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((c2, c1, 3, 3)).astype("float32") / 3, "w2")
    fc = numpy_helper.from_array(rng.standard_normal((5, c2)).astype("float32"), "fc")
    fb = numpy_helper.from_array(rng.standard_normal(5).astype("float32"), "fb")
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p1", "w2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("GlobalAveragePool", ["r2"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "fc", "fb"], ["logits"], transB=1),
             helper.make_node("Softmax", ["logits"], ["prob"], axis=1)]
    b = int(batch) if str(batch).isdigit() else batch
    g = helper.make_graph(nodes, "small_cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [b, 3, 8, 8])],
                          [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [b, 5])], [w1, w2, fc, fb])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8), str(path))
    return path


def two_inputs(path):
    """x, y -> relu(x + y) and x * y, named 'sum/relu' (a '/' as exporters write) and 'prod'."""
    nodes = [helper.make_node("Add", ["x", "y"], ["s"]), helper.make_node("Relu", ["s"], ["sum/relu"]),
             helper.make_node("Mul", ["x", "y"], ["prod"])]
    vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in ("x", "y")]
    out = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in ("sum/relu", "prod")]
    g = helper.make_graph(nodes, "two_inputs", vi, out)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), str(path))
    return path


def dynamic_mlp(path, batch="N"):
    """x[batch, 6] @ w[6, 3] + b -> relu, then flattened through a Reshape to [batch, 3] whose
    shape is computed from Shape(x) (folded per batch size at import)."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((6, 3)).astype("float32"), "w")
    b = numpy_helper.from_array(rng.standard_normal(3).astype("float32"), "b")
    idx = numpy_helper.from_array(np.array([0], np.int64), "i0")
    minus1 = numpy_helper.from_array(np.array([-1], np.int64), "m1")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm"]), helper.make_node("Add", ["mm", "b"], ["a"]),
             helper.make_node("Relu", ["a"], ["r"]),
             helper.make_node("Shape", ["x"], ["xs"]), helper.make_node("Gather", ["xs", "i0"], ["n"], axis=0),
             helper.make_node("Concat", ["n", "m1"], ["shape"], axis=0),
             helper.make_node("Reshape", ["r", "shape"], ["y"])]
    g = helper.make_graph(nodes, "dynamic_mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 3])], [w, b, idx, minus1])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), str(path))
    return path


def conv_stack(path, layers: int = 24):
    """x[1, 8, 32, 32] through `layers` Conv+Relu pairs whose channel counts all differ: as many
    distinct kernels, a build that takes a while (to interrupt)."""
    rng = np.random.default_rng(0)
    inits, nodes, prev, c = [], [], "x", 8
    for k in range(layers):
        out_c = 8 + k + 1
        inits.append(numpy_helper.from_array(rng.standard_normal((out_c, c, 3, 3)).astype("float32") / 8, f"w{k}"))
        nodes += [helper.make_node("Conv", [prev, f"w{k}"], [f"c{k}"], pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", [f"c{k}"], [f"r{k}"])]
        prev, c = f"r{k}", out_c
    g = helper.make_graph(nodes, "conv_stack", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 32, 32])],
                          [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, c, 32, 32])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), str(path))
    return path


def sibling_convs(path):
    """Two 1x1 convs (with relu) on one input, concatenated: siblings a build may merge into one
    wide conv."""
    rng = np.random.default_rng(0)
    nodes, inits = [], []
    for k in range(2):
        inits += [numpy_helper.from_array(rng.standard_normal((8, 16, 1, 1)).astype("float32"), f"w{k}"),
                  numpy_helper.from_array(rng.standard_normal(8).astype("float32"), f"b{k}")]
        nodes += [helper.make_node("Conv", ["x", f"w{k}", f"b{k}"], [f"c{k}"]),
                  helper.make_node("Relu", [f"c{k}"], [f"r{k}"])]
    nodes.append(helper.make_node("Concat", ["r0", "r1"], ["y"], axis=1))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 8, 8])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), str(path))
