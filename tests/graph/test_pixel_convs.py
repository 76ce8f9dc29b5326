"""graph/pixel_convs.py: squeeze-and-excitation's 1x1 convs over a pooled one-pixel image become
dense products between reshapes; the rewritten graph computes what the convs did (llvm, against
numpy); other convs stay convs; on CUDA the products take the dense template (the GEMV case),
not the direct conv's one-thread-per-output loop."""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse import driver
from tefuse.fusion import fuse_graph
from tefuse.graph import GraphBuilder
from tefuse.graph.pixel_convs import pixel_convs_as_dense
from tefuse.schedules import prologue_policy
from tefuse.target import make_target

B, HW, C, R = 2, 5, 32, 8


def _se(rng, layout="NHWC", dtype="float32", weight_layout=""):
    """x * sigmoid(conv(relu(conv(mean(x))))) as torchvision's SqueezeExcitation."""
    g = GraphBuilder()
    nhwc = layout == "NHWC"
    x = g.input("x", (B, HW, HW, C) if nhwc else (B, C, HW, HW), dtype)
    axis = 3 if nhwc else 1

    def conv(y, cin, cout, name):
        if weight_layout == "OHWI":
            shape = (cout, 1, 1, cin)
        else:
            shape = (1, 1, cin, cout) if nhwc else (cout, cin, 1, 1)
        w = g.const((rng.standard_normal(shape) / np.sqrt(cin)).astype(dtype), name=f"{name}_w")
        b = g.const(rng.standard_normal(cout).astype(dtype) * 0.1, name=f"{name}_b")
        attrs = {"weight_layout": weight_layout} if weight_layout else {}
        return g.bias_add(g.conv2d(y, w, layout=layout, name=name, **attrs), b, axis=axis)

    s = g.global_avg_pool2d(x, layout=layout) if nhwc else g.global_avg_pool2d(x)
    s = g.sigmoid(conv(g.relu(conv(s, C, R, "reduce")), R, C, "expand"))
    return g.build(g.mul(x, s))


def _reference(graph, x):
    return tefuse.build(graph, "llvm", fuse=False).run(x)[0]


@pytest.mark.parametrize("layout,weight_layout", [("NHWC", ""), ("NHWC", "OHWI"), ("NCHW", "")])
def test_se_convs_become_dense_and_compute_the_same(rng, layout, weight_layout):
    g = _se(rng, layout, weight_layout=weight_layout)
    f = pixel_convs_as_dense(g)
    ops = [n.op for n in f.nodes]
    assert "conv2d" not in ops and ops.count("dense") == 2
    x = rng.standard_normal(g.inputs[0].shape).astype(np.float32)
    # numpy: the SE block itself
    axes = (1, 2) if layout == "NHWC" else (2, 3)
    consts = {n.name: n.value for n in g.nodes if n.op == "constant"}

    def mat(name):  # the conv weight as [K, C]
        w = consts[name]
        if weight_layout == "OHWI":
            return w[:, 0, 0, :]
        return w[0, 0].T if layout == "NHWC" else w[:, :, 0, 0]

    pooled = x.mean(axis=axes)
    h = np.maximum(pooled @ mat("reduce_w").T + consts["reduce_b"], 0)
    s = 1 / (1 + np.exp(-(h @ mat("expand_w").T + consts["expand_b"])))
    want = x * (s[:, None, None, :] if layout == "NHWC" else s[:, :, None, None])
    got = tefuse.build(f, "llvm").run(x)[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(_reference(g, x), want, rtol=1e-4, atol=1e-5)


def test_other_convs_are_left_alone(rng):
    g = GraphBuilder()
    x = g.input("x", (B, C, HW, HW), "float32")
    w1 = g.const(rng.standard_normal((C, C, 1, 1)).astype(np.float32), name="w1")  # 1x1 over 5x5 pixels
    w3 = g.const(rng.standard_normal((C, C, 3, 3)).astype(np.float32), name="w3")
    p = g.global_avg_pool2d(x)
    y = g.conv2d(p, w3, padding=1)  # a 3x3 over one padded pixel
    graph = g.build([g.conv2d(x, w1), y])
    assert pixel_convs_as_dense(graph) is graph


def _templates(graph, target):
    tgt = make_target(target)
    prepared = driver.prepare_graph(graph, tgt, precision="fp16")
    _, preps = driver.prepare_groups(
        tgt, lambda bare: fuse_graph(prepared, prologue=prologue_policy(tgt, True), bare_anchors=bare), jobs=1)
    return {p.group.name: p.choice.template.name for p in preps}


def test_cuda_se_convs_take_the_dense_template(rng):
    g = _se(rng, "NCHW")
    templates = _templates(g, "cuda:sm_90")
    dense = [t for name, t in templates.items() if "dense" in name]
    assert len(dense) == 2 and all(t == "cuda_dense" for t in dense), templates
    assert "conv2d_direct" not in templates.values(), templates
