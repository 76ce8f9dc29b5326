"""graph/patches.py: a patch-embedding conv over an image's channels becomes a matmul on patches,
ViT's tokens made straight from the product's rows; the rewritten graph computes what the conv
did (llvm, against numpy); convs it must not touch stay convs; on CUDA (compiled here, no GPU)
ViT's patch embedding is a tensor-core product, with no channel-padding kernel."""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse.graph import GraphBuilder
from tefuse.graph.patches import patch_convs_as_products

B, C, HW, P, K = 2, 3, 32, 8, 24


def _conv(rng, layout="NCHW", weight_layout="", c=C, stride=P, pad=0, dtype="float16", tokens=True, also_out=()):
    g = GraphBuilder()
    shape = (B, c, HW, HW) if layout == "NCHW" else (B, HW, HW, c)
    x = g.input("x", shape, dtype)
    wshape = {"": (K, c, P, P) if layout == "NCHW" else (P, P, c, K), "OHWI": (K, P, P, c)}[weight_layout]
    w = g.const((rng.standard_normal(wshape) * 0.1).astype(dtype), name="w")
    attrs = {"weight_layout": weight_layout} if weight_layout else {}
    y = g.conv2d(x, w, strides=stride, padding=pad, layout=layout, name="conv", **attrs)
    seen = {"conv": y}
    if layout == "NCHW" and tokens:  # torchvision's ViT: conv_proj, reshape(n, hidden, -1), permute
        bias = g.const(rng.standard_normal(K).astype(dtype), name="b")
        y = seen["bias"] = g.bias_add(y, bias, axis=1, name="bias")
        y = seen["rows"] = g.reshape(y, shape=(B, K, (HW // P) ** 2), name="rows")
        y = seen["tokens"] = g.transpose(y, axes=(0, 2, 1), name="tokens")
    return g.build([g.relu(y), *(seen[n] for n in also_out)])


def _run(graph, x):
    return tefuse.build(graph, "llvm").run(x)[0].astype(np.float32)


@pytest.mark.parametrize("layout,weight_layout,tokens", [
    ("NCHW", "", True), ("NCHW", "", False), ("NHWC", "", False), ("NHWC", "OHWI", False)])
def test_patch_conv_becomes_a_product_that_computes_the_same(rng, layout, weight_layout, tokens):
    g = _conv(rng, layout, weight_layout, tokens=tokens)
    f = patch_convs_as_products(g)
    ops = [n.op for n in f.nodes]
    assert "conv2d" not in ops and ops.count("matmul") == 1
    (mm,) = [n for n in f.nodes if n.op == "matmul"]
    assert mm.inputs[1].shape == (C * P * P, K)  # K whole: no channel padding
    if tokens:  # the tokens come straight from the product's rows: no transpose after it
        assert ops.count("transpose") == 1  # the one cutting patches
    x = rng.standard_normal(g.inputs[0].shape).astype(np.float16)
    want, got = _run(g, x), _run(f, x)
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= 1e-2 * np.abs(want).max()


@pytest.mark.parametrize("kw,why", [
    (dict(c=8), "channels already a whole 16-byte vector"),
    (dict(stride=P // 2, tokens=False), "overlapping windows"),
    (dict(pad=1, tokens=False), "padding"),
    (dict(dtype="float32"), "float32: the conv stays"),
])
def test_left_alone(rng, kw, why):
    g = _conv(rng, **kw)
    assert patch_convs_as_products(g) is g, why


def test_cuda_build_is_a_tensor_core_product_and_no_padding_kernel(rng):
    cg = tefuse.build(_conv(rng), "cuda", cache=None)
    templates = [k.template for k in cg.kernels]
    assert {"tensorcore_gemm", "wgmma_gemm"} & set(templates), templates
    assert not any("pad" in k.group.name or "conv2d" in k.group.name for k in cg.kernels), \
        [k.group.name for k in cg.kernels]


@pytest.mark.parametrize("also_out", [("conv",), ("bias",), ("rows",), ("tokens",)])
def test_intermediates_a_caller_gets_keep_their_shapes_names_and_values(rng, also_out):
    """The conv, its bias or its [B, K, L] rows returned too: those keep the conv's layout (no
    tokens shortcut); the tokens returned too keep their name."""
    g = _conv(rng, also_out=also_out)
    f = patch_convs_as_products(g)
    assert [(o.name, o.shape) for o in f.outputs] == [(o.name, o.shape) for o in g.outputs]
    x = rng.standard_normal(g.inputs[0].shape).astype(np.float16)
    want, got = tefuse.build(g, "llvm").run(x), tefuse.build(f, "llvm").run(x)
    for w, o in zip(want, got):
        w, o = w.astype(np.float32), o.astype(np.float32)
        assert np.abs(o - w).max() <= 1e-2 * np.abs(w).max()
