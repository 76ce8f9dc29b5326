"""graph/scales.py: the scalar scales of attention's q and k^T (as torch.onnx writes them) folded
into the product's alpha, with the same numbers, and no overflow in fp16."""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse.graph import GraphBuilder
from tefuse.graph.scales import hoist_product_scales

L, B, H, D = 9, 2, 2, 8  # tokens, batch, heads, head dim
E = H * D


def _attention(scale_by="mul", weight_after=False):
    """x [L*B, 3E] (an in-projection's output) -> q, k, v split as torch's MultiheadAttention
    does -> softmax(q s @ (k^T s)) @ v, as torch.onnx exports scaled dot-product attention."""
    b = GraphBuilder()
    x = b.input("x", (L * B, 3 * E))
    qkv = b.reshape(x, shape=(L, B, 3, E))
    qkv = b.expand_dims(qkv, axes=(0,))
    qkv = b.transpose(qkv, axes=(3, 1, 2, 0, 4))
    qkv = b.squeeze(qkv, axes=(3,))  # [3, L, B, E], read by three slices

    def head(i):
        t = b.slice(qkv, starts=(i,), ends=(i + 1,), axes=(0,))
        t = b.reshape(t, shape=(L, B * H, D))
        return b.reshape(b.transpose(t, axes=(1, 0, 2)), shape=(B, H, L, D))

    q, k, v = head(0), head(1), head(2)
    s = b.const(np.float32(D ** -0.25), name="s")
    if scale_by == "mul":
        qs, kt = b.mul(q, s), b.mul(b.transpose(k, axes=(0, 1, 3, 2)), s)
    else:
        qs, kt = b.div(q, b.const(np.float32(D ** 0.25))), b.transpose(k, axes=(0, 1, 3, 2))
    p = b.softmax(b.matmul(qs, kt, name="scores"), axis=-1)
    out = b.matmul(p, v, name="context")
    if weight_after:  # a product by a weight keeps its scaled operand (its producer's epilogue)
        w = b.const(np.random.default_rng(3).standard_normal((D, 4)).astype("float32"), name="w")
        out = b.matmul(b.mul(out, s), w, name="proj")
    return b.build(out)


def _run(graph, x, **kw):
    return tefuse.build(graph, "llvm", **kw).run(x)[0]


@pytest.mark.parametrize("scale_by", ["mul", "div"])
def test_scales_fold_into_the_scores_alpha_with_the_same_numbers(scale_by):
    g = _attention(scale_by)
    h = hoist_product_scales(g)
    scores = h.node("scores")
    assert scores.op == "matmul"
    assert [i.op for i in scores.inputs] == ["reshape", "transpose"]  # the operands unscaled
    want_factor = D ** -0.5 if scale_by == "mul" else D ** -0.25  # both operands, or q alone
    assert abs(scores.attrs["alpha"] - want_factor) <= 1e-6 * want_factor
    x = np.random.default_rng(0).standard_normal((L * B, 3 * E)).astype("float32")
    np.testing.assert_allclose(_run(h, x, fuse=False), _run(g, x, fuse=False), rtol=1e-5, atol=1e-6)


def test_in_fp16_the_scale_applies_before_the_scores_are_rounded():
    """q = k = 40 over D = 64: unscaled scores are 102400, past fp16's 65504; scaled, 12800.
    The factor applies to the float32 accumulator, so nothing overflows and every row of the
    softmax is uniform (scaled after the cast to fp16 it was inf, and softmax NaN)."""
    b = GraphBuilder()
    q, k = b.input("q", (1, 8, 64)), b.input("k", (1, 8, 64))
    s = b.const(np.float32(64 ** -0.25), name="s")
    g = b.build(b.softmax(b.matmul(b.mul(q, s), b.mul(b.transpose(k, axes=(0, 2, 1)), s)), axis=-1))
    x = np.full((1, 8, 64), 40, np.float32)
    for precision in ("fp16", "bf16"):
        got = tefuse.build(g, "llvm", precision=precision).run(x, x)[0]
        np.testing.assert_allclose(got, np.full((1, 8, 8), 1 / 8, np.float32), rtol=1e-3)


def test_factors_that_are_not_scalars_or_divide_by_the_operand_are_left():
    b = GraphBuilder()
    q, k = b.input("q", (2, 4, 8)), b.input("k", (2, 8, 4))
    row = b.const(np.linspace(1, 2, 8).astype("float32"))  # one factor per column: not a scalar
    recip = b.div(b.const(np.float32(2.0)), k)  # 2 / k: not k times a factor
    g = b.build([b.matmul(b.mul(q, row), k, name="p1"), b.matmul(q, recip, name="p2")])
    h = hoist_product_scales(g)
    assert h is g


def test_a_product_by_a_weight_keeps_its_scaled_operand():
    g = _attention(weight_after=True)
    h = hoist_product_scales(g)
    assert h.node("proj").inputs[0].op == "mul" and "alpha" not in h.node("proj").attrs
