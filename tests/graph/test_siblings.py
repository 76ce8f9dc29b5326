"""graph/siblings.py: convs reading one input with one geometry become one wide conv whose
branches are channel slices; the merged graph computes what the branches did (llvm, against the
unmerged graph), graph outputs keep their names and shapes, convs that differ are left alone,
and on CUDA (sm_90, fp16) the wide conv is one wgmma kernel whose slices fuse into their readers."""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse import driver
from tefuse.codegen.lower import lower_group
from tefuse.codegen.schedule import choose_schedule
from tefuse.fusion import fuse_graph
from tefuse.graph import GraphBuilder
from tefuse.graph.ir import CONST
from tefuse.graph.siblings import merge_siblings, sibling_groups
from tefuse.schedules import prologue_policy
from tefuse.target import make_target

B, HW, C = 1, 8, 32


def _inception(rng, layout="NCHW", reduce=(16, 24, 8), output_branch=False, bn=False):
    """GoogLeNet's Inception block: three 1x1 convs on the input (bias_add, relu; with `bn` a
    folded batch-norm's per-channel multiply and add between), two of them reduce channels for a
    3x3 conv, and a max-pool branch; concatenated. output_branch: the first 1x1 branch is also a
    graph output."""
    g = GraphBuilder()
    nhwc = layout == "NHWC"
    x = g.input("x", (B, HW, HW, C) if nhwc else (B, C, HW, HW), "float32")
    axis = 3 if nhwc else 1

    def per_channel(k, scale):
        shape = (1, 1, 1, k) if nhwc else (1, k, 1, 1)
        return g.const((rng.standard_normal(shape) * scale + (1.0 if scale < 1 else 0)).astype(np.float32))

    def conv(y, cin, cout, taps, name):
        shape = (taps, taps, cin, cout) if nhwc else (cout, cin, taps, taps)
        w = g.const((rng.standard_normal(shape) / np.sqrt(cin * taps * taps)).astype(np.float32), name=f"{name}_w")
        b = g.const(rng.standard_normal(cout).astype(np.float32) * 0.1, name=f"{name}_b")
        y = g.bias_add(g.conv2d(y, w, padding=taps // 2, layout=layout, name=name), b, axis=axis)
        if bn:
            y = g.add(g.mul(y, per_channel(cout, 0.2)), per_channel(cout, 0.1))
        return g.relu(y)

    c1, c3r, c5r = reduce
    b1 = conv(x, C, c1, 1, "branch1")
    b2 = conv(conv(x, C, c3r, 1, "branch2_reduce"), c3r, 16, 3, "branch2")
    b3 = conv(conv(x, C, c5r, 1, "branch3_reduce"), c5r, 8, 3, "branch3")
    b4 = conv(g.max_pool2d(x, kernel=3, strides=1, padding=1, layout=layout), C, 8, 1, "branch4")
    out = g.concat(b1, b2, b3, b4, axis=axis)
    return g.build([out, b1] if output_branch else out)


def _run(graph, x):
    return tefuse.build(graph, "llvm").run(x)


@pytest.mark.parametrize("layout,bn", [("NCHW", False), ("NHWC", False), ("NHWC", True)])
def test_inception_reduce_convs_merge_and_compute_the_same(rng, layout, bn):
    g = _inception(rng, layout, bn=bn)
    merged = merge_siblings(g)
    convs = [n for n in merged.nodes if n.op == "conv2d"]
    assert len(convs) == 4  # one wide 1x1 of 16+24+8 channels, the two 3x3s, the pool branch's 1x1
    (wide,) = [n for n in convs if n.shape[3 if layout == "NHWC" else 1] == 48]
    # the chain (bias_add, folded batch-norm, relu) merged after the wide conv, then the slices
    steps = ["bias_add", *(["mul", "add"] if bn else []), "relu"]
    y, chain = wide, []
    for op in steps:
        (y,) = [n for n in merged.nodes if wide is not None and y in n.inputs and n.op != "slice"]
        chain.append(y.op)
    assert chain == steps
    assert sorted(n.attrs["starts"][0] for n in merged.nodes if n.op == "slice") == [0, 16, 40]
    x = rng.standard_normal(g.inputs[0].shape).astype(np.float32)
    np.testing.assert_allclose(_run(merged, x)[0], _run(g, x)[0], rtol=1e-5, atol=1e-5)


def test_a_branch_that_is_a_graph_output_keeps_its_name_and_shape(rng):
    g = _inception(rng, "NHWC", output_branch=True)
    merged = merge_siblings(g)
    assert [(o.name, o.shape) for o in merged.outputs] == [(o.name, o.shape) for o in g.outputs]
    assert merged.outputs[1].op == "slice"
    x = rng.standard_normal(g.inputs[0].shape).astype(np.float32)
    for got, want in zip(_run(merged, x), _run(g, x)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _pair(rng, strides=(1, 1), channels=(8, 8), weight_input=False, taps=(1, 1)):
    g = GraphBuilder()
    x = g.input("x", (B, HW, HW, C), "float32")
    outs = []
    for k, (s, ch, t) in enumerate(zip(strides, channels, taps)):
        if weight_input and k == 1:
            w = g.input("w1", (t, t, C, ch), "float32")
        else:
            w = g.const(rng.standard_normal((t, t, C, ch)).astype(np.float32))
        outs.append(g.relu(g.conv2d(x, w, strides=s, padding=t // 2, layout="NHWC")))
    return g.build(outs)


@pytest.mark.parametrize("what", [dict(strides=(1, 2)), dict(weight_input=True), dict(channels=(8, 6)),
                                  dict(taps=(1, 3))])
def test_convs_that_differ_are_left_alone(rng, what):
    g = _pair(rng, **what)
    assert sibling_groups(g) == []
    assert merge_siblings(g) is g


def test_equal_convs_of_any_kernel_size_merge(rng):
    g = _pair(rng, taps=(3, 3), channels=(8, 16))
    merged = merge_siblings(g)
    assert sum(n.op == "conv2d" for n in merged.nodes) == 1
    x = rng.standard_normal(g.inputs[0].shape).astype(np.float32)
    for got, want in zip(_run(merged, x), _run(g, x)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _fused(graph, tgt, siblings):
    prepared = driver.prepare_graph(graph, tgt, precision="fp16", siblings=siblings)
    return lambda bare: fuse_graph(prepared, prologue=prologue_policy(tgt, True), bare_anchors=bare)


def test_cuda_wide_conv_is_one_wgmma_kernel_and_its_slices_fuse(rng):
    g = _inception(rng, "NHWC", reduce=(64, 96, 16))
    tgt = make_target("cuda:sm_90")
    apart = _fused(g, tgt, siblings=False)(frozenset())
    merged = _fused(g, tgt, siblings=True)(frozenset())
    assert len(merged) == len(apart) - 2, ([a.name for a in apart], [m.name for m in merged])
    (wide,) = [m for m in merged if m.anchor is not None and m.anchor.shape[3] == 176]
    assert choose_schedule(lower_group(wide), tgt).template.name == "wgmma_gemm"
    for m in merged:  # every slice is read inside another op's kernel, none a copy of its own
        if any(n.op == "slice" for n in m.nodes):
            assert any(n.op != "slice" for n in m.nodes), m.name
    assert sum(n.op == "slice" for m in merged for n in m.nodes) == 3, [m.name for m in merged]


L, D, HEADS = 16, 64, 2


def _qkv(rng, widths=(D, D, D), alpha=(1.0, 1.0, 1.0), weight_input=False, attention=True):
    """A transformer layer's query, key and value: three Linears (matmul by a constant [K, N]
    weight, an add of a bias [N] before it, as exporters write it) of one input; with
    `attention`, the heads' scores, softmax and context; else the three projections are the
    outputs. weight_input: the last Linear's weight is a graph input (not a constant)."""
    g = GraphBuilder()
    x = g.input("x", (2, L, D), "float32")
    w_in = g.input("w", (D, widths[-1]), "float32") if weight_input else None
    outs = []
    for i, (n, a) in enumerate(zip(widths, alpha)):
        w = w_in if weight_input and i == len(widths) - 1 else \
            g.const((rng.standard_normal((D, n)) / np.sqrt(D)).astype(np.float32), name=f"w{i}")
        y = g.op("matmul", x, w, alpha=a) if a != 1.0 else g.op("matmul", x, w)
        outs.append(g.add(g.const(rng.standard_normal(n).astype(np.float32) * 0.1, name=f"b{i}"), y))
    if not attention:
        return g.build(outs)
    q, k, v = (g.transpose(g.reshape(t, shape=(2, L, HEADS, D // HEADS)), axes=(0, 2, 1, 3)) for t in outs)
    scores = g.op("matmul", q, g.transpose(k, axes=(0, 1, 3, 2)), alpha=float(1 / np.sqrt(D // HEADS)))
    ctx = g.op("matmul", g.softmax(scores, axis=-1), v)
    return g.build(g.reshape(g.transpose(ctx, axes=(0, 2, 1, 3)), shape=(2, L, D)))


def _linears(graph):
    return [n for n in graph.nodes if n.op == "matmul" and n.inputs[1].op == CONST]


@pytest.mark.parametrize("attention", [True, False])
def test_query_key_and_value_linears_merge_and_compute_the_same(rng, attention):
    g = _qkv(rng, attention=attention)
    merged = merge_siblings(g)
    assert len(_linears(g)) == 3 and len(_linears(merged)) == 1
    (wide,) = _linears(merged)
    assert wide.shape == (2, L, 3 * D)
    assert sum(n.op == "add" and n.inputs[1] is wide for n in merged.nodes) == 1  # the biases, one add
    x = rng.standard_normal(g.inputs[0].shape).astype(np.float32)
    got, want = _run(merged, x), _run(g, x)
    assert len(got) == len(want) == (1 if attention else 3)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    assert [o.name for o in merged.outputs] == [o.name for o in g.outputs]


@pytest.mark.parametrize("what", [dict(alpha=(1.0, 0.5, 1.0)), dict(weight_input=True), dict(widths=(D, D, 6))])
def test_linears_that_differ_are_left_alone(rng, what):
    g = _qkv(rng, attention=False, **what)
    groups = sibling_groups(g)
    assert all(len(grp) == 2 for grp in groups)  # the two alike still merge; the odd one stays
    merged = merge_siblings(g)
    assert len(_linears(merged)) == len(_linears(g)) - 1
    x = rng.standard_normal(g.inputs[0].shape).astype(np.float32)
    feeds = [x] + ([rng.standard_normal((D, 6 if "widths" in what else D)).astype(np.float32)]
                   if "weight_input" in what else [])
    for a, b in zip(tefuse.build(merged, "llvm").run(*feeds), tefuse.build(g, "llvm").run(*feeds)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_cuda_wide_query_key_value_is_one_wgmma_kernel_whose_slices_the_attention_reads(rng):
    g = _qkv(rng)
    tgt = make_target("cuda:sm_90")
    apart = _fused(g, tgt, siblings=False)(frozenset())
    merged = _fused(g, tgt, siblings=True)(frozenset())
    assert len(merged) == len(apart) - 2, ([a.name for a in apart], [m.name for m in merged])
    (wide,) = [m for m in merged if m.anchor is not None and m.anchor.shape[-1] == 3 * D]
    assert choose_schedule(lower_group(wide), tgt).template.name == "wgmma_gemm"
    (reader,) = [m for m in merged if any(n.op == "slice" for n in m.nodes)]  # no copy kernel a slice
    assert sum(n.op == "slice" for n in reader.nodes) == 3 and any(n.op == "attention" for n in reader.nodes)


@pytest.mark.parametrize("kind", ["dense", "trans_b"])
def test_linears_with_n_by_k_weights_merge_and_compute_the_same(rng, kind):
    """Gemm Linears (dense, weight [N, K]) and MatMul Linears whose weight is [N, K] (trans_b):
    the weights concatenate along their first axis; a bias_add, and a branch that is also a
    graph output, merge as elsewhere."""
    g = GraphBuilder()
    x = g.input("x", (L, D) if kind == "dense" else (2, L, D), "float32")
    outs = []
    for i, n in enumerate((32, 16)):
        w = g.const((rng.standard_normal((n, D)) / np.sqrt(D)).astype(np.float32), name=f"w{i}")
        y = g.op("dense", x, w) if kind == "dense" else g.op("matmul", x, w, trans_b=True)
        outs.append(g.relu(g.bias_add(y, g.const(rng.standard_normal(n).astype(np.float32)), axis=-1)))
    graph = g.build([g.concat(*outs, axis=-1), outs[1]])
    merged = merge_siblings(graph)
    products = [n for n in merged.nodes if n.op == kind.replace("trans_b", "matmul")]
    assert len(products) == 1 and products[0].shape[-1] == 48
    xv = rng.standard_normal(graph.inputs[0].shape).astype(np.float32)
    got, want = _run(merged, xv), _run(graph, xv)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    assert [o.shape for o in merged.outputs] == [o.shape for o in graph.outputs]


@pytest.mark.parametrize("siblings,horizontal,linears,merged_convs", [
    (None, False, 1, False), (None, True, 1, True), (True, False, 1, True), (False, True, 3, False)])
def test_by_default_the_linears_merge_and_the_convs_with_horizontal_fusion(rng, siblings, horizontal, linears,
                                                                            merged_convs):
    """Sibling Linears were measured faster (graph/siblings.py's LINEARS): merged unless siblings
    is False; sibling convs (Inception's three 1x1 reduce convs) only where asked, or with
    horizontal fusion."""
    tgt = make_target("cuda:sm_90")
    kw = dict(precision="fp16", siblings=siblings, horizontal=horizontal)
    qkv = driver.prepare_graph(_qkv(rng, attention=False), tgt, **kw)
    assert len(_linears(qkv)) + sum(n.op == "dense" for n in qkv.nodes) == linears
    convs = lambda g: sum(n.op == "conv2d" for n in g.nodes)  # noqa: E731
    g = _inception(rng, "NHWC", reduce=(64, 96, 16))
    apart = convs(driver.prepare_graph(g, tgt, precision="fp16", siblings=False))
    assert convs(driver.prepare_graph(g, tgt, **kw)) == apart - (2 if merged_convs else 0)


def test_tune_and_build_merge_the_same_siblings_under_horizontal_fusion(rng, monkeypatch):
    """prepare_graph without `horizontal` (tefuse tune's call) reads TEFUSE_HORIZONTAL as a build's
    options do, so the kernels tuned are the ones a build looks up."""
    from tefuse.options import BuildOptions

    tgt = make_target("cuda:sm_90")
    g = _inception(rng, "NHWC", reduce=(64, 96, 16))
    convs = lambda g: sum(n.op == "conv2d" for n in g.nodes)  # noqa: E731
    monkeypatch.setenv("TEFUSE_HORIZONTAL", "1")
    assert BuildOptions.from_env().horizontal
    tuned = driver.prepare_graph(g, tgt, precision="fp16")
    built = driver.prepare_graph(g, tgt, precision="fp16", horizontal=BuildOptions.from_env().horizontal)
    assert convs(tuned) == convs(built) == convs(driver.prepare_graph(g, tgt, precision="fp16", siblings=False)) - 2
