"""graph/attention_keys.py: an unfused half-precision attention whose key count is not a whole
16-byte vector gets zero keys (k^T columns, v rows) and a softmax over the real ones; the built
graph (CPU) agrees with the unpadded one and with numpy; on CUDA the kernels stay as many and
the scores and probabilities rows become whole vectors."""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse.graph import GraphBuilder
from tefuse.graph.attention_keys import pad_attention_keys


def _sdpa(keys=7, dtype="float16", extra_reader=False, also_out=None):
    b = GraphBuilder()
    q = b.input("q", (2, 3, 5, 8), dtype)
    k = b.input("k", (2, 3, keys, 8), dtype)
    v = b.input("v", (2, 3, keys, 4), dtype)
    qq, kk, vv = b.relu(q), b.relu(k), b.relu(v)  # computed operands, as in a model
    s = b.matmul(qq, b.transpose(kk, axes=(0, 1, 3, 2)), name="scores")
    p = b.softmax(s, axis=-1, name="probs")
    out = [b.matmul(p, vv, name="ctx")]
    if extra_reader:
        out.append(b.relu(p, name="other"))
    if also_out:  # an intermediate the caller gets too: its shape must stay
        out.append({"scores": s, "probs": p}[also_out])
    return b.build(out)


def _numpy(q, k, v):
    q, k, v = (np.maximum(x.astype(np.float32), 0) for x in (q, k, v))
    s = q @ k.swapaxes(-1, -2)
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ v


def test_keys_padded_to_eight_halves_and_the_softmax_told_how_many_are_real():
    g = pad_attention_keys(_sdpa(keys=7))
    scores, probs, ctx = g.node("scores"), g.node("probs"), g.node("ctx")
    assert scores.shape == (2, 3, 5, 8) and probs.shape == (2, 3, 5, 8)
    assert probs.attrs["valid"] == 7
    kt, v = scores.inputs[1], ctx.inputs[1]
    assert kt.op == "pad" and kt.shape == (2, 3, 8, 8) and v.op == "pad" and v.shape == (2, 3, 8, 4)
    assert ctx.shape == (2, 3, 5, 4)


@pytest.mark.parametrize("graph,why", [
    (lambda: _sdpa(keys=8), "keys already a whole vector"),
    (lambda: _sdpa(dtype="float32"), "float32: no tensor-core path"),
    (lambda: _sdpa(extra_reader=True), "probabilities read by another op"),
    (lambda: _sdpa(also_out="scores"), "scores a graph output"),
    (lambda: _sdpa(also_out="probs"), "probabilities a graph output"),
])
def test_left_alone(graph, why):
    g = graph()
    assert pad_attention_keys(g) is g, why


@pytest.mark.parametrize("keys", [7, 13])
def test_padded_graph_computes_the_same_on_llvm(keys, rng):
    args = [rng.standard_normal(s).astype(np.float16) for s in ((2, 3, 5, 8), (2, 3, keys, 8), (2, 3, keys, 4))]
    plain = tefuse.build(_sdpa(keys), "llvm").run(*args)[0]
    padded = tefuse.build(pad_attention_keys(_sdpa(keys)), "llvm").run(*args)[0]
    assert padded.shape == (2, 3, 5, 4)
    np.testing.assert_array_equal(padded, plain)  # the padding adds exact zeros
    want = _numpy(*args)
    assert np.abs(padded.astype(np.float32) - want).max() <= 1e-2 * np.abs(want).max()


def test_cuda_build_pads_without_adding_a_kernel():
    """On CUDA (compiled here, no GPU) the pass runs in build: the pads are read in the products'
    loads, so the kernels are the unpadded graph's (3 anchors + the relus as prologues)."""
    cg = tefuse.build(_sdpa(7), "cuda", cache=None)
    names = [k.group.name for k in cg.kernels]
    assert len(names) == 3, names
    assert any("softmax|2x3x5x8" in k.workload for k in cg.kernels), [k.workload for k in cg.kernels]


def test_one_attentions_context_as_the_next_ones_scores_pads_only_the_first(rng):
    """ctx1 = softmax(q k^T) v is the scores of a second attention over 5 keys: each node takes
    one part, the first attention's, and the result is the unpadded graph's."""
    b = GraphBuilder()
    q, k = b.input("q", (1, 2, 8, 8), "float16"), b.input("k", (1, 2, 7, 8), "float16")
    v, v2 = b.input("v", (1, 2, 7, 5), "float16"), b.input("v2", (1, 2, 5, 3), "float16")
    s1 = b.matmul(b.relu(q), b.transpose(b.relu(k), axes=(0, 1, 3, 2)), name="s1")
    c1 = b.matmul(b.softmax(s1, name="p1"), b.relu(v), name="c1")
    g = b.build([b.matmul(b.softmax(c1, name="p2"), b.relu(v2), name="c2")])
    f = pad_attention_keys(g)
    assert f.node("p1").attrs["valid"] == 7 and "valid" not in f.node("p2").attrs
    args = [rng.standard_normal(x.shape).astype(np.float16) for x in g.inputs]
    np.testing.assert_array_equal(tefuse.build(f, "llvm").run(*args)[0], tefuse.build(g, "llvm").run(*args)[0])
