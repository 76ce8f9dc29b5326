"""torch's MultiheadAttention as torch.onnx exports it inside a batch-first encoder (as in
ViT-B/16), small: the node sequence of the real export (seq-first
transpose, in-projection, unflatten/unsqueeze/transpose/squeeze split, Gather of q/k/v, heads,
sqrt-scaled q and k^T, Softmax, context, head merge, out-projection Gemm, back to batch-first,
residual). tefuse on llvm against onnxruntime in fp32 and fp16, and the kernels it fuses into."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import tefuse
from tefuse.frontend.onnx import import_onnx

from .test_onnx import make_model

ort = pytest.importorskip("onnxruntime")

B, L, H, D = 2, 5, 2, 8
E = H * D


def _i64(*v):
    return np.array(v, np.int64)


def mha_block(rng):
    r = lambda *s: (rng.standard_normal(s) * 0.3).astype(np.float32)  # noqa: E731
    scale = np.float32(np.sqrt(1 / np.sqrt(D)))
    n = helper.make_node
    nodes = [
        n("Transpose", ["x"], ["xt"], perm=[1, 0, 2]),                     # [L, B, E]
        n("MatMul", ["xt", "w_in"], ["qkv0"]),
        n("Add", ["b_in", "qkv0"], ["qkv"]),                               # [L, B, 3E]
        n("Reshape", ["qkv", "s_unflat"], ["u"]),                          # [L, B, 3, E]
        n("Unsqueeze", ["u", "ax0"], ["u1"]),                              # [1, L, B, 3, E]
        n("Transpose", ["u1"], ["u2"], perm=[3, 1, 2, 0, 4]),              # [3, L, B, 1, E]
        n("Squeeze", ["u2", "ax3"], ["u3"]),                               # [3, L, B, E]
        n("Gather", ["u3", "i0"], ["q0"], axis=0),
        n("Gather", ["u3", "i1"], ["k0"], axis=0),
        n("Gather", ["u3", "i2"], ["v0"], axis=0),
    ]
    for t in ("q", "k", "v"):
        nodes += [n("Reshape", [f"{t}0", "s_heads"], [f"{t}1"]),             # [L, B*H, D]
                  n("Transpose", [f"{t}1"], [f"{t}2"], perm=[1, 0, 2]),       # [B*H, L, D]
                  n("Reshape", [f"{t}2", "s_bhld"], [f"{t}3"])]                # [B, H, L, D]
    nodes += [
        n("Transpose", ["k3"], ["kt"], perm=[0, 1, 3, 2]),
        n("Mul", ["q3", "scale"], ["qs"]),
        n("Mul", ["kt", "scale"], ["ks"]),
        n("MatMul", ["qs", "ks"], ["scores"]),
        n("Softmax", ["scores"], ["p"], axis=-1),
        n("MatMul", ["p", "v3"], ["ctx"]),                                 # [B, H, L, D]
        n("Transpose", ["ctx"], ["ctx_t"], perm=[2, 0, 1, 3]),             # [L, B, H, D]
        n("Reshape", ["ctx_t", "s_rows"], ["ctx_r"]),                      # [L*B, E]
        n("Gemm", ["ctx_r", "w_out", "b_out"], ["o"], transB=1),
        n("Reshape", ["o", "s_lbe"], ["o3"]),                              # [L, B, E]
        n("Transpose", ["o3"], ["o_bf"], perm=[1, 0, 2]),                  # [B, L, E]
        n("Add", ["o_bf", "x"], ["y"]),
    ]
    inits = {"w_in": r(E, 3 * E), "b_in": r(3 * E), "w_out": r(E, E), "b_out": r(E), "scale": scale,
             "s_unflat": _i64(L, B, 3, E), "ax0": _i64(0), "ax3": _i64(3), "i0": np.array(0, np.int64),
             "i1": np.array(1, np.int64), "i2": np.array(2, np.int64), "s_heads": _i64(L, B * H, D),
             "s_bhld": _i64(B, H, L, D), "s_rows": _i64(L * B, E), "s_lbe": _i64(L, B, E)}
    return make_model(nodes, {"x": (B, L, E)}, {"y": None}, inits, opset=17)


@pytest.mark.parametrize("precision,tol", [("fp32", 1e-5), ("fp16", 1e-2)])
def test_torch_mha_export_matches_onnxruntime(rng, precision, tol):
    model = mha_block(rng)
    x = rng.standard_normal((B, L, E)).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = tefuse.build(import_onnx(model), "llvm", precision=precision).run(x)[0]
    assert got.dtype == np.float32
    assert np.abs(got - want).max() <= tol * np.abs(want).max()


def test_torch_mha_export_fuses_into_five_kernels(rng):
    """in-projection (+ bias; the seq-first transpose read in its prologue), q @ k^T (the split
    cloned into its loads, the scales its alpha), softmax, context (its head merge written by
    its epilogue), out-projection (+ bias, back to batch-first and the residual in its epilogue).
    Neither the split nor the batch-first add is a kernel of its own."""
    from tefuse.driver import prepare_graph
    from tefuse.fusion import fuse_graph

    # fp32: in fp16 this one-block model adds a kernel casting its input, which both the
    # projection and the residual read (inside a model the previous block's output is fp16)
    graph = prepare_graph(import_onnx(mha_block(rng)), "cuda")
    groups = fuse_graph(graph)
    anchors = [g.anchor.op if g.anchor is not None else None for g in groups]
    assert anchors == ["matmul", "matmul", "softmax", "matmul", "dense"], [g.name for g in groups]
    (scores,) = [n for n in graph.nodes if n.op == "matmul" and "alpha" in n.attrs]
    assert abs(scores.attrs["alpha"] - 1 / np.sqrt(D)) < 1e-3 / np.sqrt(D)
    assert groups[-1].nodes[-1].op == "add"
