"""Per-op ONNX import: tiny models built with onnx.helper, tefuse (llvm) vs onnxruntime."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import tefuse
from tefuse.errors import ModelImportError
from tefuse.frontend.onnx import import_onnx

ort = pytest.importorskip("onnxruntime")

F = TensorProto.FLOAT


def make_model(nodes, inputs: dict, outputs: dict, inits: dict | None = None, opset: int = 13):
    """inputs/outputs: name -> shape (None for outputs: let shape inference fill it)."""
    g = helper.make_graph(
        nodes, "t",
        [helper.make_tensor_value_info(k, F, list(s)) for k, s in inputs.items()],
        [helper.make_tensor_value_info(k, F, None if s is None else list(s)) for k, s in outputs.items()],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)
    return onnx.shape_inference.infer_shapes(m)  # fills the output shapes left as None


def check(model, feeds: dict, rtol=1e-4, atol=1e-5, target="llvm", of_scale=0.0):
    """Import, build (for llvm by default), run; compare every output with onnxruntime.
    of_scale: an absolute tolerance of at least this fraction of the output's largest magnitude."""
    graph = import_onnx(model)
    cg = tefuse.build(graph, target)
    got = cg.run(**feeds)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=max(atol, of_scale * float(np.abs(w).max(initial=0))))
    return graph, cg


def rnd(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# -- convolution ---------------------------------------------------------------------------
CONV_CASES = {
    "pads_asym_stride": dict(pads=[1, 0, 2, 1], strides=[2, 1]),
    "dilated_group": dict(pads=[2, 2, 2, 2], dilations=[2, 2], group=2),
    "depthwise": dict(pads=[1, 1, 1, 1], group=4),
    "same_upper": dict(auto_pad="SAME_UPPER", strides=[2, 2]),
    "same_lower": dict(auto_pad="SAME_LOWER", strides=[2, 2]),
    "valid": dict(auto_pad="VALID"),
}


@pytest.mark.parametrize("case", sorted(CONV_CASES))
def test_conv(case, rng):
    attrs = CONV_CASES[case]
    g = attrs.get("group", 1)
    k = 4 if g == 4 else 6
    w = rnd(rng, k, 4 // g, 3, 3)
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[3, 3], **attrs)
    m = make_model([node], {"x": (1, 4, 9, 8)}, {"y": None}, {"w": w, "b": rnd(rng, k)})
    check(m, {"x": rnd(rng, 1, 4, 9, 8)})


def test_conv_bn_relu_fuses_into_one_kernel(rng):
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["n"], epsilon=1e-3),
             helper.make_node("Relu", ["n"], ["y"])]
    inits = {"w": rnd(rng, 8, 3, 3, 3), "s": rnd(rng, 8), "bb": rnd(rng, 8), "m": rnd(rng, 8),
             "v": rng.random(8).astype(np.float32) + 0.5}
    _, cg = check(make_model(nodes, {"x": (2, 3, 6, 6)}, {"y": None}, inits, opset=9),
                  {"x": rnd(rng, 2, 3, 6, 6)})
    assert cg.num_kernels == 1


# -- elementwise ---------------------------------------------------------------------------
UNARY = [("Relu", {}, 9), ("Sigmoid", {}, 9), ("Tanh", {}, 9), ("LeakyRelu", {"alpha": 0.2}, 9),
         ("Elu", {"alpha": 0.7}, 9), ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}, 9),
         ("HardSwish", {}, 14), ("Gelu", {}, 20), ("Gelu", {"approximate": "tanh"}, 20),
         ("Exp", {}, 13), ("Abs", {}, 13), ("Neg", {}, 13)]


@pytest.mark.parametrize("op,attrs,opset", UNARY, ids=[f"{o}{'-' + str(a) if a else ''}-{s}" for o, a, s in UNARY])
def test_unary(op, attrs, opset, rng):
    m = make_model([helper.make_node(op, ["x"], ["y"], **attrs)], {"x": (2, 3, 5)}, {"y": None}, opset=opset)
    check(m, {"x": rnd(rng, 2, 3, 5) * 3})


def test_clip_opset9_attributes(rng):
    m = make_model([helper.make_node("Clip", ["x"], ["y"], min=-0.5, max=0.7)], {"x": (4, 5)}, {"y": None},
                   opset=9)
    check(m, {"x": rnd(rng, 4, 5)})


def test_clip_opset13_inputs(rng):
    nodes = [helper.make_node("Clip", ["x", "lo", "hi"], ["y"]), helper.make_node("Clip", ["x", "", "hi"], ["z"])]
    m = make_model(nodes, {"x": (4, 5)}, {"y": None, "z": None},
                   {"lo": np.float32(-0.5), "hi": np.float32(0.7)})
    graph, _ = check(m, {"x": rnd(rng, 4, 5)})
    assert [n.op for n in graph.nodes if n.is_op] == ["clip", "clip"]


def test_clip_runtime_bounds(rng):
    m = make_model([helper.make_node("Clip", ["x", "lo", "hi"], ["y"])], {"x": (4, 5), "lo": (), "hi": ()},
                   {"y": None})
    check(m, {"x": rnd(rng, 4, 5), "lo": np.array(-0.3, np.float32), "hi": np.array(0.2, np.float32)})


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Max", "Min"])
def test_binary_broadcast(op, rng):
    m = make_model([helper.make_node(op, ["x", "c"], ["y"])], {"x": (2, 3, 4)}, {"y": None},
                   {"c": rng.random((3, 1)).astype(np.float32) + 0.5})
    check(m, {"x": rnd(rng, 2, 3, 4)})


def test_pow_sum_variadic(rng):
    nodes = [helper.make_node("Pow", ["x", "e"], ["p"]),
             helper.make_node("Sum", ["p", "x", "z"], ["s"]),
             helper.make_node("Max", ["s", "x", "z"], ["y"])]
    m = make_model(nodes, {"x": (3, 4), "z": (4,)}, {"y": None}, {"e": np.float32(2.0)})
    check(m, {"x": rng.random((3, 4)).astype(np.float32), "z": rnd(rng, 4)})


# -- dense ---------------------------------------------------------------------------------
def test_matmul(rng):
    m = make_model([helper.make_node("MatMul", ["x", "w"], ["y"])], {"x": (2, 3, 5)}, {"y": None},
                   {"w": rnd(rng, 5, 4)})
    check(m, {"x": rnd(rng, 2, 3, 5)})


@pytest.mark.parametrize("attrs,cshape", [({}, (4,)), ({"transB": 1}, (3, 4)),
                                          ({"transA": 1, "alpha": 0.5, "beta": 2.0}, (1, 4)),
                                          ({"beta": 0.0}, (4,))])
def test_gemm(attrs, cshape, rng):
    a_shape = (5, 3) if attrs.get("transA") else (3, 5)
    b = rnd(rng, 4, 5) if attrs.get("transB") else rnd(rng, 5, 4)
    m = make_model([helper.make_node("Gemm", ["a", "b", "c"], ["y"], **attrs)], {"a": a_shape}, {"y": None},
                   {"b": b, "c": rnd(rng, *cshape)}, opset=11)
    check(m, {"a": rnd(rng, *a_shape)})


def test_gemm_runtime_b(rng):
    m = make_model([helper.make_node("Gemm", ["a", "b"], ["y"])], {"a": (3, 5), "b": (5, 4)}, {"y": None})
    check(m, {"a": rnd(rng, 3, 5), "b": rnd(rng, 5, 4)})


# -- pooling -------------------------------------------------------------------------------
POOLS = [("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), 9),
         ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1), 11),
         ("MaxPool", dict(kernel_shape=[2, 2], dilations=[2, 2], pads=[1, 0, 0, 1]), 12),
         ("MaxPool", dict(kernel_shape=[2, 3], strides=[2, 2], auto_pad="SAME_UPPER"), 11),
         ("MaxPool", dict(kernel_shape=[3, 2], strides=[2, 2], auto_pad="SAME_LOWER"), 11),
         ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), 9),
         ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 0, 1, 0], count_include_pad=1), 11),
         ("AveragePool", dict(kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1), 11)]


@pytest.mark.parametrize("op,attrs,opset", POOLS, ids=[f"{o}-{k}" for k, (o, _, _) in enumerate(POOLS)])
def test_pool(op, attrs, opset, rng):
    m = make_model([helper.make_node(op, ["x"], ["y"], **attrs)], {"x": (1, 3, 9, 7)}, {"y": None}, opset=opset)
    check(m, {"x": rnd(rng, 1, 3, 9, 7)})


def test_global_pool_flatten_lrn(rng):
    nodes = [helper.make_node("LRN", ["x"], ["l"], size=3, alpha=1e-2, beta=0.6, bias=1.5),
             helper.make_node("GlobalAveragePool", ["l"], ["g"]),
             helper.make_node("Flatten", ["g"], ["y"], axis=1)]
    m = make_model(nodes, {"x": (2, 5, 4, 4)}, {"y": None}, opset=11)
    check(m, {"x": rnd(rng, 2, 5, 4, 4)})


# -- layout and shapes ---------------------------------------------------------------------
def test_reshape_transpose_concat(rng):
    nodes = [helper.make_node("Reshape", ["x", "s"], ["r"]),
             helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1]),
             helper.make_node("Concat", ["t", "k"], ["y"], axis=1)]
    m = make_model(nodes, {"x": (2, 12)}, {"y": None},
                   {"s": np.array([0, -1, 4], np.int64), "k": rnd(rng, 2, 1, 3)})
    check(m, {"x": rnd(rng, 2, 12)})


@pytest.mark.parametrize("opset", [11, 13])
def test_softmax_opsets(opset, rng):
    """Softmax(axis=1) on 3-D: opset 11 normalises over dims 1 and 2 together, opset 13 over dim 1."""
    nodes = [helper.make_node("Softmax", ["x"], ["y"], axis=1), helper.make_node("LogSoftmax", ["x"], ["z"])]
    m = make_model(nodes, {"x": (2, 3, 4)}, {"y": None, "z": None}, opset=opset)
    graph, cg = check(m, {"x": rnd(rng, 2, 3, 4)})
    y = cg.run(rnd(rng, 2, 3, 4))[0]
    sums = y.sum(axis=(1, 2)) if opset == 11 else y.sum(axis=1)
    np.testing.assert_allclose(sums, 1.0, rtol=1e-5)


@pytest.mark.parametrize("opset", [9, 13])
def test_pad_opsets(opset, rng):
    pads = [0, 0, 1, 2, 0, 0, 2, 0]
    if opset < 11:
        node = helper.make_node("Pad", ["x"], ["y"], pads=pads, value=0.5)
        inits = {}
    else:
        node = helper.make_node("Pad", ["x", "p", "v"], ["y"])
        inits = {"p": np.array(pads, np.int64), "v": np.float32(0.5)}
    check(make_model([node], {"x": (1, 2, 3, 3)}, {"y": None}, inits, opset=opset), {"x": rnd(rng, 1, 2, 3, 3)})


@pytest.mark.parametrize("opset", [11, 13])
def test_squeeze_unsqueeze_opsets(opset, rng):
    if opset < 13:
        nodes = [helper.make_node("Squeeze", ["x"], ["s"], axes=[1]),
                 helper.make_node("Unsqueeze", ["s"], ["y"], axes=[0, 3])]
        inits = {}
    else:
        nodes = [helper.make_node("Squeeze", ["x", "a"], ["s"]), helper.make_node("Unsqueeze", ["s", "b"], ["y"])]
        inits = {"a": np.array([1], np.int64), "b": np.array([0, 3], np.int64)}
    graph, _ = check(make_model(nodes, {"x": (2, 1, 3)}, {"y": None}, inits, opset=opset), {"x": rnd(rng, 2, 1, 3)})
    assert graph.outputs[0].shape == (1, 2, 3, 1)


@pytest.mark.parametrize("opset", [9, 13])
def test_slice_opsets(opset, rng):
    if opset < 10:
        node = helper.make_node("Slice", ["x"], ["y"], starts=[1, 0], ends=[3, 100], axes=[0, 2])
        inits = {}
    else:
        node = helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"])
        inits = {"st": np.array([1, -1], np.int64), "en": np.array([3, -100], np.int64),
                 "ax": np.array([0, 2], np.int64), "sp": np.array([1, -2], np.int64)}
    check(make_model([node], {"x": (4, 3, 5)}, {"y": None}, inits, opset=opset), {"x": rnd(rng, 4, 3, 5)})


def test_shape_gather_folding_flatten_pattern(rng):
    """PyTorch's flatten export: Shape -> Gather -> Unsqueeze -> Concat -> Reshape, all folded."""
    nodes = [helper.make_node("Shape", ["x"], ["sh"]),
             helper.make_node("Gather", ["sh", "i0"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n", "ax0"], ["nu"]),
             helper.make_node("Concat", ["nu", "m1"], ["shape"], axis=0),
             helper.make_node("Reshape", ["x", "shape"], ["r"]),
             helper.make_node("Gather", ["r", "idx"], ["y"], axis=1),
             helper.make_node("ConstantOfShape", ["cs"], ["ones"],
                              value=numpy_helper.from_array(np.array([2.0], np.float32))),
             helper.make_node("Constant", [], ["k"], value_float=3.0),
             helper.make_node("Mul", ["y", "ones"], ["y2"]),
             helper.make_node("Add", ["y2", "k"], ["z"])]
    inits = {"i0": np.array(0, np.int64), "ax0": np.array([0], np.int64), "m1": np.array([-1], np.int64),
             "idx": np.array([[4, 0], [1, 1]], np.int64), "cs": np.array([2, 2], np.int64)}
    m = make_model(nodes, {"x": (3, 2, 2, 2)}, {"z": (3, 2, 2)}, inits)
    graph, _ = check(m, {"x": rnd(rng, 3, 2, 2, 2)})
    ops = {n.op for n in graph.nodes if n.is_op}
    assert "reshape" in ops and not ops & {"shape", "constant"}


def test_dropout_identity_are_free(rng):
    nodes = [helper.make_node("Dropout", ["x"], ["d"], ratio=0.5), helper.make_node("Identity", ["d"], ["i"]),
             helper.make_node("Relu", ["i"], ["y"])]
    graph, _ = check(make_model(nodes, {"x": (3, 4)}, {"y": None}, opset=9), {"x": rnd(rng, 3, 4)})
    assert [n.op for n in graph.nodes if n.is_op] == ["relu"]


@pytest.mark.parametrize("axis, bias", [(-1, True), (1, True), (2, False)])
def test_layer_normalization(axis, bias, rng):
    shape = (2, 5, 8)
    norm = shape[axis:] if axis >= 0 else shape[axis:]
    inputs = ["x", "g", "b"] if bias else ["x", "g"]
    node = helper.make_node("LayerNormalization", inputs, ["y"], axis=axis, epsilon=1e-3)
    inits = {"g": rnd(rng, *norm), **({"b": rnd(rng, *norm)} if bias else {})}
    x = rnd(rng, *shape) * 3 + 1  # a mean and scale far from 0 and 1
    graph, cg = check(make_model([node], {"x": shape}, {"y": None}, inits, opset=17), {"x": x})
    if len(norm) == 1:  # the last axis alone: one layer_norm kernel (a missing bias is zeros)
        assert [n.op for n in graph.nodes if n.is_op] == ["layer_norm"] and cg.num_kernels == 1
    else:  # several axes: mean, variance, normalise
        assert cg.num_kernels == 3


def test_layer_normalization_with_its_statistics_asked_is_decomposed(rng):
    """Mean and InvStdDev are outputs too: the reductions stay nodes of their own (three kernels)."""
    node = helper.make_node("LayerNormalization", ["x", "g", "b"], ["y", "mean", "inv_std"], axis=-1)
    inits = {"g": rnd(rng, 8), "b": rnd(rng, 8)}
    model = make_model([node], {"x": (2, 5, 8)}, {"y": None, "mean": None, "inv_std": None}, inits, opset=17)
    graph, cg = check(model, {"x": rnd(rng, 2, 5, 8) * 3 + 1})
    assert "layer_norm" not in [n.op for n in graph.nodes] and cg.num_kernels == 3


def test_layer_normalization_fp16_keeps_float32_statistics(rng):
    h = TensorProto.FLOAT16
    g = helper.make_graph(
        [helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1)], "t",
        [helper.make_tensor_value_info("x", h, [2, 5, 8])], [helper.make_tensor_value_info("y", h, [2, 5, 8])],
        [numpy_helper.from_array(rnd(rng, 8).astype(np.float16), k) for k in ("g", "b")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    x = (rnd(rng, 2, 5, 8) * 3 + 1).astype(np.float16)
    _, cg = check(m, {"x": x}, rtol=2e-3, atol=4e-3)
    assert cg.num_kernels == 1


def attention_block(rng, batch: int = 2, t: int = 6, d: int = 8):
    """Self-attention as torch exports it at opset 17: LayerNorm, QKV projection, Split, scaled
    batched MatMul, Softmax, output projection and residual. Returns (model, feeds)."""
    nodes = [helper.make_node("LayerNormalization", ["x", "g", "b"], ["n"], axis=-1),
             helper.make_node("MatMul", ["n", "wqkv"], ["qkv"]),
             helper.make_node("Split", ["qkv", "sizes"], ["q", "k", "v"], axis=-1),
             helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["q", "kt"], ["s"]),
             helper.make_node("Mul", ["s", "scale"], ["ss"]),
             helper.make_node("Softmax", ["ss"], ["p"], axis=-1),
             helper.make_node("MatMul", ["p", "v"], ["a"]),
             helper.make_node("MatMul", ["a", "wo"], ["o"]),
             helper.make_node("Add", ["x", "o"], ["y"])]
    inits = {"g": rnd(rng, d), "b": rnd(rng, d), "wqkv": rnd(rng, d, 3 * d) / 3,
             "sizes": np.array([d, d, d], np.int64), "scale": np.array(d ** -0.5, np.float32),
             "wo": rnd(rng, d, d) / 3}
    return make_model(nodes, {"x": (batch, t, d)}, {"y": None}, inits, opset=17), {"x": rnd(rng, batch, t, d)}


def test_transformer_block_layer_norm_attention(rng):
    check(*attention_block(rng))


def test_seq_first_projection_is_one_gemm(rng):
    """torch's MultiheadAttention in-projection: LayerNorm, [1, T, D] -> [T, 1, D], MatMul, bias."""
    t, d = 11, 16
    nodes = [helper.make_node("LayerNormalization", ["x", "g", "b"], ["n"], axis=-1),
             helper.make_node("Transpose", ["n"], ["nt"], perm=[1, 0, 2]),
             helper.make_node("MatMul", ["nt", "w"], ["m"]),
             helper.make_node("Add", ["m", "bias"], ["y"])]
    inits = {"g": rnd(rng, d), "b": rnd(rng, d), "w": rnd(rng, d, 3 * d), "bias": rnd(rng, 3 * d)}
    graph, cg = check(make_model(nodes, {"x": (1, t, d)}, {"y": None}, inits, opset=17), {"x": rnd(rng, 1, t, d)})
    (mm,) = [k for k in cg.kernels if "matmul" in k.group.name]
    assert "matmul = T.sblock_alloc_buffer((11, 48))" in mm.tir


@pytest.mark.parametrize("opset, how", [(11, "attr"), (13, "input"), (18, "num_outputs"), (13, "equal")])
def test_split(opset, how, rng):
    outs = ["a", "b", "c"]
    if how == "attr":
        node, inits = helper.make_node("Split", ["x"], outs, axis=1, split=[1, 3, 3]), {}
    elif how == "input":
        node, inits = helper.make_node("Split", ["x", "s"], outs, axis=-1), {"s": np.array([2, 0, 3], np.int64)}
    elif how == "num_outputs":  # 7 into 3: 3, 3, 1
        node, inits = helper.make_node("Split", ["x"], outs, axis=1, num_outputs=3), {}
    else:
        node, inits = helper.make_node("Split", ["x"], outs[:1] + ["b"], axis=0), {}
        outs = outs[:2]
    shape = (4, 7, 5)
    check(make_model([node], {"x": shape}, {o: None for o in outs}, inits, opset=opset), {"x": rnd(rng, *shape)})


# -- errors --------------------------------------------------------------------------------
def test_unsupported_nodes_are_all_listed():
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="ok_relu"),
             helper.make_node("Hardmax", ["a"], ["b"], name="bad_hardmax"),
             helper.make_node("Pad", ["b", "p"], ["c"], name="bad_pad_mode", mode="antisymmetric"),
             helper.make_node("Conv", ["x", "w3"], ["d"], name="bad_conv3d", kernel_shape=[1, 1, 3]),
             helper.make_node("Relu", ["a"], ["e"], name="bad_relu_attr"),
             helper.make_node("Bernoulli", ["e"], ["f"], name="bad_bernoulli")]
    nodes[4].attribute.append(helper.make_attribute("bogus", 1))
    m = make_model(nodes, {"x": (1, 2, 8)}, {"c": None, "d": None, "f": None},
                   {"p": np.zeros(6, np.int64), "w3": np.ones((2, 2, 3), np.float32)})
    with pytest.raises(ModelImportError) as ei:
        import_onnx(m, check=False)
    msg = str(ei.value)
    for name in ("bad_hardmax", "bad_pad_mode", "bad_conv3d", "bad_relu_attr", "bad_bernoulli"):
        assert name in msg
    assert "ok_relu" not in msg
    assert {p.node for p in ei.value.problems} == {"bad_hardmax", "bad_pad_mode", "bad_conv3d",
                                                   "bad_relu_attr", "bad_bernoulli"}
    assert "Hardmax" in msg and "opset 13" in msg and "bogus" in msg


def test_unknown_input_dims_need_input_shapes(rng):
    m = make_model([helper.make_node("Relu", ["x"], ["y"])], {"x": ("N", 4)}, {"y": None})
    with pytest.raises(ModelImportError, match="input_shapes.*'x'"):
        import_onnx(m)
    g = import_onnx(m, input_shapes={"x": (3, 4)})
    assert g.inputs[0].shape == (3, 4)


def test_old_opset_is_converted(rng):
    """Below opset 9 the model goes through onnx.version_converter instead of being refused."""
    m = make_model([helper.make_node("Relu", ["x"], ["y"])], {"x": (2,)}, {"y": None}, opset=7)
    check(m, {"x": rnd(rng, 2)})


def test_old_opset_that_does_not_convert_is_refused_in_one_line(monkeypatch):
    from onnx import version_converter

    def boom(model, target):
        raise RuntimeError("No Adapter For Relu\nmore detail")

    monkeypatch.setattr(version_converter, "convert_version", boom)
    m = make_model([helper.make_node("Relu", ["x"], ["y"])], {"x": (2,)}, {"y": None}, opset=7)
    with pytest.raises(ModelImportError, match=r"opset 7 .*cannot convert it to opset 13: No Adapter For Relu$"):
        import_onnx(m, check=False)


def test_model_file_path(tmp_path, rng):
    m = make_model([helper.make_node("Sigmoid", ["x"], ["y"])], {"x": (2, 3)}, {"y": None})
    p = tmp_path / "m.onnx"
    onnx.save(m, str(p))
    g = import_onnx(str(p))
    x = rnd(rng, 2, 3)
    np.testing.assert_allclose(tefuse.build(g, "llvm").run(x)[0], 1 / (1 + np.exp(-x)), rtol=1e-5)


def test_initializer_of_the_wrong_size_is_refused_by_name():
    """Unchecked (check=False), an initializer whose raw data is too short used to end in numpy's
    reshape ValueError."""
    from onnx import numpy_helper

    from tefuse.errors import ModelImportError

    w = numpy_helper.from_array(np.ones((4, 3), "float32"), "W")
    w.raw_data = w.raw_data[:20]
    g = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(ModelImportError, match=r"initializer 'W': its data does not fit its type and shape \[4, 3\]"):
        import_onnx(m, check=False)


def test_a_wrong_input_shape_names_the_node_it_breaks_not_shape_inference():
    from tefuse.errors import ModelImportError

    w = numpy_helper.from_array(np.ones((4, 3), "float32"), "W")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(ModelImportError) as e:
        import_onnx(m, input_shapes={"x": (2, 5)})
    assert "inner dimensions differ: (2, 5) @ (4, 3)" in str(e.value) and "MatMul" in str(e.value)
    assert "shape inference" not in str(e.value) and "shape-inference" not in str(e.value)
