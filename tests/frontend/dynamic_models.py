"""ONNX models with symbolic dims for the dynamic-shape tests: a small CNN with a named batch and a
one-layer transformer encoder with named batch and sequence length."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17  # LayerNormalization


def _model(nodes, name, inputs, outputs, inits) -> onnx.ModelProto:
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=8)


def cnn(batch="N") -> onnx.ModelProto:
    """conv -> batch norm -> relu -> max pool -> conv -> relu -> flatten -> gemm, batch `batch`
    (a name, or a size for the exact model)."""
    rng = np.random.default_rng(0)

    def init(name, shape, scale=0.3):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype("float32"), name)

    inits = [init("w1", (8, 3, 3, 3)), init("w2", (6, 8, 3, 3)), init("fc", (10, 6 * 4 * 4)), init("fb", (10,)),
             init("gamma", (8,)), init("beta", (8,)), init("mean", (8,)),
             numpy_helper.from_array(rng.uniform(0.5, 1.5, 8).astype("float32"), "var")]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c1", "gamma", "beta", "mean", "var"], ["bn"]),
             helper.make_node("Relu", ["bn"], ["r1"]),
             helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p1", "w2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("Flatten", ["r2"], ["f"]),
             helper.make_node("Gemm", ["f", "fc", "fb"], ["logits"], transB=1)]
    return _model(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, 8, 8])],
                  [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, 10])], inits)


HIDDEN, HEADS = 32, 4


def encoder(batch="B", seq="S") -> onnx.ModelProto:
    """x + pos -> LayerNorm -> q, k, v (MatMul + Add) -> heads (Reshape, Transpose) -> softmax(q k^T
    * scale) v -> heads merged -> MatMul + Add -> residual -> ReduceMean-based norm. x and pos both
    take [batch, seq, HIDDEN]: the model says their dims are equal."""
    rng = np.random.default_rng(1)
    h, d = HIDDEN, HIDDEN // HEADS

    def init(name, shape, scale=0.2):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype("float32"), name)

    inits = [init("ln_s", (h,), 1.0), init("ln_b", (h,)), init("wo", (h, h)), init("bo", (h,)),
             numpy_helper.from_array(np.array([0, 0, HEADS, d], "int64"), "heads"),
             numpy_helper.from_array(np.array([0, 0, h], "int64"), "merged"),
             numpy_helper.from_array(np.array(1 / np.sqrt(d), "float32"), "scale"),
             numpy_helper.from_array(np.array(1e-5, "float32"), "eps")]
    nodes = [helper.make_node("Add", ["x", "pos"], ["e"]),
             helper.make_node("LayerNormalization", ["e", "ln_s", "ln_b"], ["hn"], axis=-1)]
    for t in "qkv":
        inits += [init(f"w{t}", (h, h)), init(f"b{t}", (h,))]
        nodes += [helper.make_node("MatMul", ["hn", f"w{t}"], [f"{t}m"]),
                  helper.make_node("Add", [f"{t}m", f"b{t}"], [f"{t}a"]),
                  helper.make_node("Reshape", [f"{t}a", "heads"], [f"{t}h"])]
    nodes += [helper.make_node("Transpose", ["qh"], ["q4"], perm=[0, 2, 1, 3]),
              helper.make_node("Transpose", ["kh"], ["k4"], perm=[0, 2, 3, 1]),
              helper.make_node("Transpose", ["vh"], ["v4"], perm=[0, 2, 1, 3]),
              helper.make_node("MatMul", ["q4", "k4"], ["qk"]),
              helper.make_node("Mul", ["qk", "scale"], ["qks"]),
              helper.make_node("Softmax", ["qks"], ["p"], axis=-1),
              helper.make_node("MatMul", ["p", "v4"], ["ctx"]),
              helper.make_node("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["ctx_t", "merged"], ["ctx_m"]),
              helper.make_node("MatMul", ["ctx_m", "wo"], ["om"]),
              helper.make_node("Add", ["om", "bo"], ["oa"]),
              helper.make_node("Add", ["oa", "hn"], ["res"]),
              helper.make_node("ReduceMean", ["res"], ["mu"], axes=[-1], keepdims=1),
              helper.make_node("Sub", ["res", "mu"], ["xc"]),
              helper.make_node("Mul", ["xc", "xc"], ["sq"]),
              helper.make_node("ReduceMean", ["sq"], ["var"], axes=[-1], keepdims=1),
              helper.make_node("Add", ["var", "eps"], ["ve"]),
              helper.make_node("Sqrt", ["ve"], ["sd"]),
              helper.make_node("Div", ["xc", "sd"], ["y"])]
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [batch, seq, h]) for n in ("x", "pos")]
    return _model(nodes, "encoder", ins, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, seq, h])],
                  inits)
