"""graph/attention.py: matmul(q, k^T) -> softmax -> matmul(., v) made one attention op where the
target's templates take it, k^T read through, the scale carried, nothing else touched; and the
built graph (fuse_attention=True, CPU) agrees with the unfused one and with onnxruntime."""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse.frontend.onnx import import_onnx
from tefuse.graph import GraphBuilder
from tefuse.graph.attention import fuse_attention
from tefuse.graph.scales import hoist_product_scales

from .test_scales import B, D, E, H, L, _attention

ALWAYS = lambda geo, dtype: True  # noqa: E731


def _sdpa(kt_as="transpose", extra_reader=False, axis=-1):
    b = GraphBuilder()
    q, k, v = b.input("q", (2, 3, 5, 8)), b.input("k", (2, 3, 7, 8)), b.input("v", (2, 3, 7, 4))
    qq, kk, vv = b.relu(q), b.relu(k), b.relu(v)  # computed operands, as in a model
    kt = b.transpose(kk, axes=(0, 1, 3, 2)) if kt_as == "transpose" else b.reshape(kk, shape=(2, 3, 8, 7))
    s = b.matmul(qq, kt, name="scores")
    p = b.softmax(s, axis=axis, name="probs")
    out = [b.matmul(p, vv, name="ctx")]
    if extra_reader:
        out.append(b.relu(s, name="other"))
    return b.build(out)


def test_the_three_ops_become_one_with_k_read_through_and_the_scale():
    g = hoist_product_scales(_attention())
    f = fuse_attention(g, ALWAYS)
    ctx = f.node("context")
    assert ctx.op == "attention" and ctx.shape == (B, H, L, D)
    assert abs(ctx.attrs["alpha"] - D ** -0.5) <= 1e-6 * D ** -0.5
    q, k, v = ctx.inputs
    assert k.shape == (B, H, L, D) and k.op == "reshape"  # the transpose to k^T read through
    assert not any(n.op in ("softmax", "matmul") for n in f.nodes)


def test_a_k_transposed_otherwise_gets_a_transpose():
    f = fuse_attention(_sdpa(kt_as="reshape"), ALWAYS)
    k = f.node("ctx").inputs[1]
    assert k.op == "transpose" and k.shape == (2, 3, 7, 8) and k.inputs[0].op == "reshape"


@pytest.mark.parametrize("graph,why", [
    (lambda: _sdpa(extra_reader=True), "scores read by another op"),
    (lambda: _sdpa(axis=2), "softmax over another axis"),
])
def test_left_alone(graph, why):
    g = graph()
    assert fuse_attention(g, ALWAYS) is g, why


def test_not_formed_where_no_template_takes_it():
    g = _sdpa()
    seen = []
    assert fuse_attention(g, lambda geo, dtype: seen.append((geo, dtype)) or False) is g
    ((geo, dtype),) = seen
    assert (geo.lq, geo.lk, geo.d, geo.dv, dtype) == (5, 7, 8, 4, "float32")


@pytest.mark.parametrize("precision,tol", [("fp32", 1e-5), ("fp16", 1e-2)])
def test_fused_build_matches_onnxruntime_and_is_one_kernel_less_twice(rng, precision, tol):
    ort = pytest.importorskip("onnxruntime")
    from tests.frontend.test_onnx_attention import mha_block

    model = mha_block(rng)
    x = rng.standard_normal((2, 5, 16)).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    fused = tefuse.build(import_onnx(model), "llvm", precision=precision, fuse_attention=True)
    plain = tefuse.build(import_onnx(model), "llvm", precision=precision)
    assert len(fused.kernels) == len(plain.kernels) - 2
    got = fused.run(x)[0]
    assert np.abs(got - want).max() <= tol * np.abs(want).max()


def test_an_attention_whose_output_is_another_ones_scores():
    """ctx1 = attention(q, k, v) and softmax(ctx1) @ v2: the outer one is formed from ctx1's own
    operands (its softmax and scores come back unfused), with the numbers of the unfused graph."""
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    q, kt = b.relu(b.input("q", (2, 16, 16))), b.relu(b.input("kt", (2, 16, 16)))
    v, v2 = b.relu(b.input("v", (2, 16, 16))), b.relu(b.input("v2", (2, 16, 8)))
    ctx1 = b.matmul(b.softmax(b.matmul(q, kt), axis=-1), v, name="ctx1")
    g = b.build(b.matmul(b.softmax(ctx1, axis=-1), v2, name="ctx2"))
    f = fuse_attention(g, ALWAYS)
    assert f.node("ctx2").op == "attention" and sum(n.op == "attention" for n in f.nodes) == 1
    feed = {n: rng.standard_normal((2, 16, 8 if n == "v2" else 16)).astype("float32") for n in ("q", "kt", "v", "v2")}
    want = tefuse.build(g, "llvm").run(**feed)[0]
    got = tefuse.build(f, "llvm").run(**feed)[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def masked_attention_model(causal: bool, b=2, h=2, lq=6, d=8):
    """relu(q, k, v) [B, H, L, D] (computed operands, as in a model) and an int64 key mask [B, L], as
    transformers writes BERT's self-attention
    (scores scaled after the product, the mask (1 - m) * lowest added, [B, 1, 1, L]); `causal`: a
    lower triangle where'd in as well, as GPT-2's ([B, 1, L, L])."""
    from onnx import TensorProto, helper, numpy_helper

    lowest = np.finfo(np.float32).min
    consts = [numpy_helper.from_array(np.array(d ** -0.5, np.float32), "scale"),
              numpy_helper.from_array(np.array(1.0, np.float32), "one"),
              numpy_helper.from_array(np.array(lowest, np.float32), "lowest"),
              numpy_helper.from_array(np.array([1, 2], np.int64), "axes12"),
              numpy_helper.from_array(np.tril(np.ones((lq, lq), bool)), "tril"),
              numpy_helper.from_array(np.array(0.0, np.float32), "zero")]
    nodes = [helper.make_node("Relu", [n], [f"{n}r"]) for n in "qkv"] + [
        helper.make_node("Transpose", ["kr"], ["kt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["qr", "kt"], ["s"]),
        helper.make_node("Mul", ["s", "scale"], ["ss"]),
        helper.make_node("Cast", ["mask"], ["mf"], to=TensorProto.FLOAT),
        helper.make_node("Sub", ["one", "mf"], ["inv"]),
        helper.make_node("Mul", ["inv", "lowest"], ["keymask"]),
        helper.make_node("Unsqueeze", ["keymask", "axes12"], ["bias"]),
    ]
    if causal:
        nodes += [helper.make_node("Where", ["tril", "zero", "lowest"], ["tri"]),
                  helper.make_node("Add", ["bias", "tri"], ["bias2"])]
    nodes += [helper.make_node("Add", ["ss", "bias2" if causal else "bias"], ["logits"]),
              helper.make_node("Softmax", ["logits"], ["p"], axis=-1),
              helper.make_node("MatMul", ["p", "vr"], ["y"])]
    shape = [b, h, lq, d]
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in "qkv"]
    inputs.append(helper.make_tensor_value_info("mask", TensorProto.INT64, [b, lq]))
    graph = helper.make_graph(nodes, "masked", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
                              initializer=consts)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("causal", [False, True])
def test_a_masked_attention_becomes_one_op_with_its_bias_and_scale(causal):
    g = import_onnx(masked_attention_model(causal))
    f = fuse_attention(hoist_product_scales(g), ALWAYS)
    (att,) = [n for n in f.nodes if n.op == "attention"]
    assert abs(att.attrs["alpha"] - 8 ** -0.5) <= 1e-6
    assert att.inputs[3].shape == ((2, 1, 6, 6) if causal else (2, 1, 1, 6))
    assert not any(n.op in ("softmax", "matmul") for n in f.nodes)


def test_an_fp16_graphs_saturated_logits_give_the_op_its_clip():
    from tefuse.graph.precision import convert_precision

    g = convert_precision(hoist_product_scales(import_onnx(masked_attention_model(False))), "fp16")
    f = fuse_attention(g, ALWAYS)
    (att,) = [n for n in f.nodes if n.op == "attention"]
    assert att.attrs["clip"] == 65504.0 and att.dtype == "float16" and att.inputs[3].dtype == "float32"


def test_a_logit_read_by_another_op_keeps_the_three_kernels():
    b = GraphBuilder()
    q, k, v, m = (b.input(n, (2, 3, 5, 5)) for n in "qkvm")
    logits = b.add(b.matmul(b.relu(q), b.relu(k)), m)
    g = b.build([b.matmul(b.softmax(logits, axis=-1), b.relu(v)), b.relu(logits)])
    assert fuse_attention(g, ALWAYS) is g


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("precision,tol", [("fp32", 1e-5), ("fp16", 1e-2)])
def test_a_fused_masked_build_matches_onnxruntime(rng, causal, precision, tol):
    """Keys masked in batch 1 (and the causal triangle): fused on llvm, against onnxruntime."""
    ort = pytest.importorskip("onnxruntime")
    model = masked_attention_model(causal)
    feed = {n: rng.standard_normal((2, 2, 6, 8)).astype(np.float32) for n in "qkv"}
    feed["mask"] = np.array([[1] * 6, [1] * 4 + [0] * 2], np.int64)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feed)[0]
    fused = tefuse.build(import_onnx(model), "llvm", precision=precision, fuse_attention=True)
    assert sum(any(n.op == "attention" for n in k.group.nodes) for k in fused.kernels) == 1
    got = fused.run(**feed)[0]
    assert np.abs(got - want).max() <= tol * np.abs(want).max()


def shifted_window_model(rng, b=2, windows=4, h=2, n=16, d=16, relu=True):
    """Swin's shifted-window attention as torchvision exports it: relu(q, k, v) [B * nW, H, N, D]
    (q, k, v as they are without `relu`: an fp16 build's casts compute them);
    the scores plus a relative-position bias [1, H, N, N], viewed as [B, nW, H, N, N] to add the
    windows' mask [1, nW, 1, N, N] (0 or -100), and viewed back for the softmax."""
    from onnx import TensorProto, helper, numpy_helper

    mask = np.where(rng.random((1, windows, 1, n, n)) < 0.3, -100.0, 0.0).astype(np.float32)
    consts = [numpy_helper.from_array(rng.standard_normal((1, h, n, n)).astype(np.float32), "rel"),
              numpy_helper.from_array(mask, "mask"),
              numpy_helper.from_array(np.array([b, windows, h, n, n], np.int64), "split"),
              numpy_helper.from_array(np.array([b * windows, h, n, n], np.int64), "merged")]
    nodes = [helper.make_node("Relu" if relu else "Identity", [x], [f"{x}r"]) for x in "qkv"] + [
        helper.make_node("Transpose", ["kr"], ["kt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["qr", "kt"], ["s"]),
        helper.make_node("Add", ["s", "rel"], ["s1"]),
        helper.make_node("Reshape", ["s1", "split"], ["s5"]),
        helper.make_node("Add", ["s5", "mask"], ["m5"]),
        helper.make_node("Reshape", ["m5", "merged"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "vr"], ["y"])]
    shape = [b * windows, h, n, d]
    graph = helper.make_graph(nodes, "swin", [helper.make_tensor_value_info(x, TensorProto.FLOAT, shape) for x in "qkv"],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], initializer=consts)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


def test_swins_window_mask_is_added_over_the_windows_view_as_one_bias(rng):
    f = fuse_attention(import_onnx(shifted_window_model(rng)), ALWAYS)
    (att,) = [n for n in f.nodes if n.op == "attention"]
    bias = att.inputs[3]
    assert bias.op == "add" and bias.shape == (8, 2, 16, 16)  # the windows' mask expanded, not the product
    assert {i.shape for i in bias.inputs} == {(1, 2, 16, 16), (8, 1, 16, 16)}
    assert not any(n.op in ("softmax", "matmul") for n in f.nodes)


@pytest.mark.parametrize("precision,tol", [("fp32", 1e-5), ("fp16", 1e-2)])
def test_a_fused_shifted_window_build_matches_onnxruntime(rng, precision, tol):
    ort = pytest.importorskip("onnxruntime")
    model = shifted_window_model(rng)
    feed = {x: rng.standard_normal((8, 2, 16, 16)).astype(np.float32) for x in "qkv"}
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feed)[0]
    fused = tefuse.build(import_onnx(model), "llvm", precision=precision, fuse_attention=True)
    assert sum(any(n.op == "attention" for n in k.group.nodes) for k in fused.kernels) == 1
    assert np.abs(fused.run(**feed)[0] - want).max() <= tol * np.abs(want).max()


def test_a_scalar_outside_the_bias_add_keeps_the_three_kernels():
    """softmax(c * (q k^T + b)) would scale the bias too: not the op's alpha * s + b."""
    b = GraphBuilder()
    q, k, v = (b.relu(b.input(n, (2, 3, 5, 5))) for n in "qkv")
    m = b.input("m", (2, 1, 1, 5))
    logits = b.mul(b.add(b.matmul(q, k), m), b.const(np.array(0.5, np.float32)))
    g = b.build(b.matmul(b.softmax(logits, axis=-1), v))
    assert fuse_attention(g, ALWAYS) is g


def test_an_infinite_clip_or_logits_read_as_an_output_keep_the_three_kernels():
    """Clip(-inf, inf) is no clamp the op can print; logits that are a graph output are computed
    anyway."""
    b = GraphBuilder()
    q, k, v = (b.relu(b.input(n, (2, 3, 5, 5))) for n in "qkv")
    m = b.input("m", (2, 1, 1, 5))
    logits = b.op("clip", b.add(b.matmul(q, k), m), min=float("-inf"), max=float("inf"))
    g = b.build(b.matmul(b.softmax(logits, axis=-1), v))
    assert fuse_attention(g, ALWAYS) is g
    b = GraphBuilder()
    q, k, v = (b.relu(b.input(n, (2, 3, 5, 5))) for n in "qkv")
    logits = b.add(b.matmul(q, k), b.input("m", (2, 1, 1, 5)))
    g = b.build([b.matmul(b.softmax(logits, axis=-1), v), logits])
    assert fuse_attention(g, ALWAYS) is g


def test_bias_terms_of_two_dtypes_are_summed_in_float32(rng):
    """An fp16 graph adding an fp16 constant to its scores, then in float32 a float32 mask (as the
    precision pass leaves transformers' masks): one float32 bias, and the fused build computes
    what the unfused one does on llvm."""
    b = GraphBuilder()
    q, k, v = (b.relu(b.input(n, (2, 2, 6, 8), "float16")) for n in "qkv")
    rel = b.const((rng.standard_normal((1, 2, 6, 6)) * 0.5).astype(np.float16), name="rel")
    s = b.add(b.matmul(q, b.transpose(k, axes=(0, 1, 3, 2))), rel)
    mask = b.input("mask", (2, 1, 1, 6), "float32")
    logits = b.cast(b.add(b.cast(s, dtype="float32"), mask), dtype="float16")
    g = b.build(b.matmul(b.softmax(logits, axis=-1), v))
    f = fuse_attention(g, ALWAYS)
    (att,) = [n for n in f.nodes if n.op == "attention"]
    bias = att.inputs[3]
    assert bias.op == "add" and bias.dtype == "float32" and bias.shape == (2, 2, 6, 6)
    feed = {n: rng.standard_normal((2, 2, 6, 8)).astype(np.float16) for n in "qkv"}
    feed["mask"] = np.where(np.arange(6) < 4, 0.0, -1e4).astype(np.float32).reshape(1, 1, 1, 6).repeat(2, 0)
    want = tefuse.build(g, "llvm").run(**feed)[0]
    got = tefuse.build(f, "llvm").run(**feed)[0]
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-2, atol=1e-2)


def test_an_attention_over_a_symbolic_batch_keeps_the_three_kernels():
    """The templates size their tiles and grids from fixed shapes: a dynamic build (`--dynamic`)
    keeps the three kernels, which take symbolic extents."""
    g = hoist_product_scales(import_onnx(masked_attention_model(False, b="N"), dynamic=True))
    assert not any(n.op == "attention" for n in fuse_attention(g, ALWAYS).nodes)
    assert any(n.op == "attention" for n in fuse_attention(hoist_product_scales(import_onnx(
        masked_attention_model(False))), ALWAYS).nodes)
