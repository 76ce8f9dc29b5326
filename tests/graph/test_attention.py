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
