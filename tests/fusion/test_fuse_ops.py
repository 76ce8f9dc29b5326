"""The fusion pass: which ops share a kernel, and that fused kernels compute what the
unfused graph computes (llvm vs float64 numpy, and fused vs unfused builds)."""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse import GraphBuilder
from tefuse.fusion import fuse_graph
from tests.reference import assert_close, batch_norm, conv2d, group_norm, layer_norm, sigmoid, softmax


def ops_of(groups):
    return [[n.op for n in g.nodes] for g in groups]


def run(g, *feeds, **kw):
    cg = tefuse.build(g, "llvm", **kw)
    return cg, cg.run(*feeds)


def check_against_unfused(g, feeds, rtol=1e-5, atol=1e-5):
    """Same graph built with one kernel per op (prologue/multi-output off, then nothing fused)."""
    fused = tefuse.build(g, "llvm").run(*feeds)
    plain = tefuse.build(g, "llvm", prologue=False, multi_output=False).run(*feeds)
    for a, b in zip(fused, plain):
        assert_close(a, b, rtol=rtol, atol=atol)
    return fused


def _conv_bn_relu(rng, layout="NCHW", c=4, k=6, hw=6):
    b = GraphBuilder()
    xs = (1, c, hw, hw) if layout == "NCHW" else (1, hw, hw, c)
    ws = (k, c, 3, 3) if layout == "NCHW" else (3, 3, c, k)
    x = b.input("x", xs)
    w = rng.standard_normal(ws).astype("float32")
    bias = rng.standard_normal(k).astype("float32")
    bn = [rng.uniform(0.5, 1.5, k), rng.standard_normal(k), rng.standard_normal(k), rng.uniform(0.5, 2, k)]
    bn = [v.astype("float32") for v in bn]
    ax = 1 if layout == "NCHW" else 3
    y = b.conv2d(x, b.const(w, name="w"), padding=1, layout=layout)
    y = b.bias_add(y, b.const(bias, name="bias"), axis=ax)
    y = b.batch_norm(y, *(b.const(v, name=n) for v, n in zip(bn, ["gamma", "beta", "mean", "var"])), axis=ax)
    y = b.relu(y)
    g = b.build(y)
    xv = rng.standard_normal(xs).astype("float32")
    bshape = [1, 1, 1, 1]
    bshape[ax] = k
    ref = np.maximum(batch_norm(conv2d(xv, w, padding=1, layout=layout) + bias.reshape(bshape), *bn, axis=ax), 0)
    return g, xv, ref


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_conv_bias_bn_relu_is_one_group(rng, layout):
    g, xv, ref = _conv_bn_relu(rng, layout)
    groups = tefuse.fuse_graph(g)
    assert ops_of(groups) == [["conv2d", "bias_add", "batch_norm", "relu"]]
    assert groups[0].anchor.op == "conv2d" and groups[0].outputs == g.outputs
    cg, (y,) = run(g, xv)
    assert cg.num_kernels == 1
    assert_close(y, ref, rtol=1e-4, atol=1e-4)


def _conv_residual(rng, as_input=True):
    b = GraphBuilder()
    x = b.input("x", (1, 4, 6, 6))
    w = rng.standard_normal((4, 4, 3, 3)).astype("float32")
    bias = rng.standard_normal(4).astype("float32")
    y = b.bias_add(b.conv2d(x, b.const(w, name="w"), padding=1), b.const(bias, name="bias"))
    res = b.input("res", (1, 4, 6, 6)) if as_input else x
    y = b.relu(b.add(y, res))
    xv = rng.standard_normal((1, 4, 6, 6)).astype("float32")
    rv = rng.standard_normal((1, 4, 6, 6)).astype("float32") if as_input else xv
    ref = np.maximum(conv2d(xv, w, padding=1) + bias.reshape(1, -1, 1, 1) + rv, 0)
    return b.build(y), ([xv, rv] if as_input else [xv]), ref


@pytest.mark.parametrize("as_input", [True, False], ids=["residual_input", "residual_is_conv_input"])
def test_conv_bias_add_residual_relu_is_one_group(rng, as_input):
    g, feeds, ref = _conv_residual(rng, as_input)
    assert ops_of(tefuse.fuse_graph(g)) == [["conv2d", "bias_add", "add", "relu"]]
    cg, (y,) = run(g, *feeds)
    assert cg.num_kernels == 1
    assert_close(y, ref, rtol=1e-4, atol=1e-4)


def test_relu_output_feeding_two_convs(rng):
    """relu has two consumers: it stays in its producer's group; each consumer conv reads it."""
    b = GraphBuilder()
    x = b.input("x", (1, 4, 6, 6))
    ws = [rng.standard_normal((4, 4, 3, 3)).astype("float32") for _ in range(3)]
    r = b.relu(b.conv2d(x, b.const(ws[0]), padding=1), name="r")
    a = b.conv2d(r, b.const(ws[1]), padding=1, name="a")
    c = b.conv2d(r, b.const(ws[2]), padding=1, name="c")
    y = b.add(a, c, name="y")
    g = b.build(y)
    groups = tefuse.fuse_graph(g)
    assert sorted(map(tuple, ops_of(groups))) == [("conv2d",), ("conv2d", "add"), ("conv2d", "relu")]
    relu_group = next(gr for gr in groups if "relu" in [n.op for n in gr.nodes])
    assert [o.name for o in relu_group.outputs] == ["r"]
    for gr in groups:  # no node in two groups, and every conv is its group's anchor
        assert sum(n.op == "conv2d" for n in gr.nodes) == 1
    xv = rng.standard_normal((1, 4, 6, 6)).astype("float32")
    rv = np.maximum(conv2d(xv, ws[0], padding=1), 0)
    ref = conv2d(rv, ws[1], padding=1) + conv2d(rv, ws[2], padding=1)
    _, (yv,) = run(g, xv)
    assert_close(yv, ref, rtol=1e-4, atol=1e-4)
    check_against_unfused(g, [xv], rtol=1e-4, atol=1e-4)


def test_conv_output_read_by_relu_and_graph_output(rng):
    b = GraphBuilder()
    x = b.input("x", (1, 3, 5, 5))
    w = rng.standard_normal((4, 3, 3, 3)).astype("float32")
    cv = b.conv2d(x, b.const(w), padding=1, name="cv")
    r = b.relu(cv, name="r")
    g = b.build([r, cv])
    groups = tefuse.fuse_graph(g)
    # both values reach memory and neither group computes a node twice
    assert sum(len(gr.nodes) for gr in groups) == 2
    outs = {o.name for gr in groups for o in gr.outputs}
    assert outs == {"r", "cv"}
    xv = rng.standard_normal((1, 3, 5, 5)).astype("float32")
    ref = conv2d(xv, w, padding=1)
    _, (rv, cvv) = run(g, xv)
    assert_close(cvv, ref, rtol=1e-4, atol=1e-4)
    assert_close(rv, np.maximum(ref, 0), rtol=1e-4, atol=1e-4)


def test_intermediate_with_outside_consumer_is_group_output(rng):
    """bias_add feeds relu (fusable) and a reduction in another group: it must reach memory."""
    b = GraphBuilder()
    x = b.input("x", (1, 4, 5, 5))
    w = rng.standard_normal((4, 4, 3, 3)).astype("float32")
    bias = rng.standard_normal(4).astype("float32")
    ba = b.bias_add(b.conv2d(x, b.const(w), padding=1), b.const(bias), name="ba")
    r = b.relu(ba, name="r")
    s = b.reduce_sum(ba, axes=(2, 3), name="s")
    g = b.build([r, s])
    xv = rng.standard_normal((1, 4, 5, 5)).astype("float32")
    ref = conv2d(xv, w, padding=1) + bias.reshape(1, -1, 1, 1)
    _, (rv, sv) = run(g, xv)
    assert_close(rv, np.maximum(ref, 0), rtol=1e-4, atol=1e-4)
    assert_close(sv, ref.sum(axis=(2, 3)), rtol=1e-4, atol=1e-4)
    check_against_unfused(g, [xv], rtol=1e-4, atol=1e-4)


def test_diamond_of_elementwise_ops_is_one_group(rng):
    b = GraphBuilder()
    x = b.input("x", (3, 8))
    t = b.tanh(x)
    y = b.add(b.exp(t), b.sigmoid(t))
    g = b.build(y)
    assert len(tefuse.fuse_graph(g)) == 1
    xv = rng.standard_normal((3, 8)).astype("float32")
    t64 = np.tanh(xv.astype(np.float64))
    assert_close(run(g, xv)[1][0], np.exp(t64) + sigmoid(t64))


# -- prologue fusion ----------------------------------------------------------------------
def _prologue_graph(rng, kind):
    b = GraphBuilder()
    w = rng.standard_normal((6, 4, 3, 3)).astype("float32")
    wn = b.const(w, name="w")
    if kind == "layout_transform":
        x = b.input("x", (1, 5, 5, 4))
        y = b.conv2d(b.layout_transform(x, src="NHWC", dst="NCHW"), wn, padding=1)
        xv = rng.standard_normal((1, 5, 5, 4)).astype("float32")
        ref = conv2d(xv.transpose(0, 3, 1, 2), w, padding=1)
    elif kind == "pad":
        x = b.input("x", (1, 4, 5, 5))
        y = b.conv2d(b.pad(x, pads=(0, 0, 1, 2, 0, 0, 2, 1), value=0.5), wn)
        xv = rng.standard_normal((1, 4, 5, 5)).astype("float32")
        ref = conv2d(np.pad(xv, [(0, 0), (0, 0), (1, 2), (2, 1)], constant_values=0.5), w)
    elif kind == "cast":
        x = b.input("x", (1, 4, 5, 5), "float16")
        y = b.conv2d(b.cast(x, dtype="float32"), wn, padding=1)
        xv = rng.standard_normal((1, 4, 5, 5)).astype("float16")
        ref = conv2d(xv, w, padding=1)
    elif kind == "mul":
        x = b.input("x", (1, 4, 5, 5))
        scale = rng.uniform(0.5, 2, (1, 4, 1, 1)).astype("float32")
        y = b.conv2d(b.mul(x, b.const(scale, name="scale")), wn, padding=1)
        xv = rng.standard_normal((1, 4, 5, 5)).astype("float32")
        ref = conv2d(xv * scale, w, padding=1)
    elif kind == "normalize":  # (x - mean) * inv_std, then NCHW -> NHWC for an NHWC conv
        x = b.input("x", (1, 4, 5, 5))
        mean = rng.standard_normal((1, 4, 1, 1)).astype("float32")
        inv = rng.uniform(0.5, 2, (1, 4, 1, 1)).astype("float32")
        t = b.mul(b.sub(x, b.const(mean)), b.const(inv))
        whwio = w.transpose(2, 3, 1, 0).copy()
        y = b.conv2d(b.layout_transform(t, src="NCHW", dst="NHWC"), b.const(whwio), padding=1, layout="NHWC")
        xv = rng.standard_normal((1, 4, 5, 5)).astype("float32")
        ref = conv2d(((xv - mean) * inv).transpose(0, 2, 3, 1), whwio, padding=1, layout="NHWC")
    y = b.relu(y)
    return b.build(y), xv, np.maximum(ref, 0)


@pytest.mark.parametrize("kind", ["layout_transform", "pad", "cast", "mul", "normalize"])
def test_prologue_joins_conv_group(rng, kind):
    g, xv, ref = _prologue_graph(rng, kind)
    groups = tefuse.fuse_graph(g)
    assert len(groups) == 1, [gr.describe() for gr in groups]
    (gr,) = groups
    assert gr.anchor.op == "conv2d"
    assert [n.op for n in gr.prologue] == [n.op for n in gr.nodes[:gr.nodes.index(gr.anchor)]]
    assert gr.prologue, "the prologue op should precede the anchor"
    cg, (y,) = run(g, xv)
    assert cg.num_kernels == 1
    assert_close(y, ref, rtol=1e-4, atol=1e-4)


def test_prologue_off_keeps_producer_separate(rng):
    g, xv, ref = _prologue_graph(rng, "mul")
    assert len(tefuse.fuse_graph(g, prologue=False)) == 2
    cg, (y,) = run(g, xv, prologue=False)
    assert_close(y, ref, rtol=1e-4, atol=1e-4)


def test_prologue_with_second_consumer_is_not_fused(rng):
    """A scaled input that is also a graph output must be materialised once, not recomputed."""
    b = GraphBuilder()
    x = b.input("x", (1, 4, 5, 5))
    w = rng.standard_normal((4, 4, 3, 3)).astype("float32")
    s = b.mul(x, b.const(np.float32(2.0)), name="s")
    y = b.conv2d(s, b.const(w), padding=1, name="y")
    g = b.build([y, s])
    groups = tefuse.fuse_graph(g)
    assert sum(len(gr.nodes) for gr in groups) == 2
    xv = rng.standard_normal((1, 4, 5, 5)).astype("float32")
    _, (yv, sv) = run(g, xv)
    assert_close(sv, 2 * xv.astype(np.float64))
    assert_close(yv, conv2d(2 * xv, w, padding=1), rtol=1e-4, atol=1e-4)


def test_weight_prologue(rng):
    """An elementwise op on the weight (a per-channel scale) lands in the conv's group too."""
    b = GraphBuilder()
    x = b.input("x", (1, 4, 5, 5))
    w = rng.standard_normal((6, 4, 3, 3)).astype("float32")
    sc = rng.uniform(0.5, 2, (6, 1, 1, 1)).astype("float32")
    y = b.conv2d(x, b.mul(b.const(w), b.const(sc)), padding=1)
    g = b.build(y)
    assert len(tefuse.fuse_graph(g)) == 1
    xv = rng.standard_normal((1, 4, 5, 5)).astype("float32")
    assert_close(run(g, xv)[1][0], conv2d(xv, w * sc, padding=1), rtol=1e-4, atol=1e-4)


# -- row-wise norms take an injective prologue ----------------------------------------------
def bert_embeddings(rng, batch=2, length=7, vocab=50, width=32, also=None):
    """BERT's embeddings: Gather(word table, int64 ids) + Gather(position table, positions) +
    Gather(token-type table, int64 types), then LayerNorm. also="output" makes the sum a graph
    output too, also="residual" adds it to the norm's result (a pre-LN residual stream).
    -> (graph, feeds, references)"""
    b = GraphBuilder()
    ids, types = b.input("ids", (batch, length), "int64"), b.input("types", (batch, length), "int64")
    words, positions, kinds = (rng.standard_normal(s).astype("float32") for s in
                               ((vocab, width), (2 * length, width), (2, width)))
    pos = np.arange(length, dtype="int64")[None]
    gamma, beta = rng.uniform(0.5, 1.5, width).astype("float32"), rng.standard_normal(width).astype("float32")
    e = b.add(b.take(b.const(words, name="words"), ids), b.take(b.const(positions, name="positions"),
                                                                b.const(pos, name="pos")))
    e = b.add(e, b.take(b.const(kinds, name="kinds"), types), name="emb")
    y = b.layer_norm(e, b.const(gamma, name="gamma"), b.const(beta, name="beta"), epsilon=1e-12, name="ln")
    iv, tv = rng.integers(0, vocab, (batch, length)), rng.integers(0, 2, (batch, length))
    ev = words[iv].astype(np.float64) + positions[pos] + kinds[tv]
    yv = layer_norm(ev, gamma, beta, 1e-12)
    if also == "output":
        return b.build([y, e]), [iv, tv], [yv, ev]
    if also == "residual":
        return b.build(b.add(y, e)), [iv, tv], [yv + ev]
    return b.build(y), [iv, tv], [yv]


def test_an_embedding_lookup_and_its_adds_are_computed_inside_layer_norms_kernel(rng):
    """The gathers and adds are layer_norm's prologue (fuse_ops.PROLOGUE_OPAQUE): recomputed
    in each of its row reads, no kernel of their own."""
    g, feeds, (ref,) = bert_embeddings(rng)
    (gr,) = tefuse.fuse_graph(g)
    assert gr.anchor.op == "layer_norm" and gr.anchor_kind == "norm"
    assert sorted(n.op for n in gr.prologue) == ["add", "add", "take", "take", "take"]
    cg, (y,) = run(g, *feeds)
    assert cg.num_kernels == 1
    assert_close(y, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("also", ["output", "residual"])
def test_an_embedding_sum_read_elsewhere_is_written_once_not_recomputed_in_layer_norm(rng, also):
    """The sum has a consumer besides layer_norm (a graph output; a residual add): it is
    written by its own kernel, which layer_norm and the other consumer read."""
    g, feeds, refs = bert_embeddings(rng, also=also)
    groups = tefuse.fuse_graph(g)
    assert sum(len(gr.nodes) for gr in groups) == len([n for n in g.nodes if n.is_op])  # nothing twice
    (norm,) = [gr for gr in groups if gr.anchor is not None and gr.anchor.op == "layer_norm"]
    assert not norm.prologue
    emb = next(gr for gr in groups if "emb" in [o.name for o in gr.outputs])
    assert emb.anchor is None and {n.op for n in emb.nodes} == {"take", "add"}
    cg, outs = run(g, *feeds)
    assert cg.num_kernels == len(groups)
    for got, ref in zip(outs, refs):
        assert_close(got, ref, rtol=1e-5, atol=1e-5)


def test_group_norm_rows_takes_an_elementwise_prologue(rng):
    """The other op on the norm template: a residual sum and its cast read inside the kernel."""
    b = GraphBuilder()
    x, r = b.input("x", (2, 8, 3, 5), "float16"), b.input("r", (2, 8, 3, 5), "float16")
    scale, bias = rng.uniform(0.5, 1.5, 8).astype("float32"), rng.standard_normal(8).astype("float32")
    s = b.cast(b.add(x, r), dtype="float32")
    y = b.op("group_norm_rows", s, b.const(scale), b.const(bias), groups=4)
    g = b.build(y)
    (gr,) = tefuse.fuse_graph(g)
    assert [n.op for n in gr.prologue] == ["add", "cast"] and gr.anchor.op == "group_norm_rows"
    xv, rv = (rng.standard_normal((2, 8, 3, 5)).astype("float16") for _ in range(2))
    cg, (yv,) = run(g, xv, rv)
    assert cg.num_kernels == 1
    ref = group_norm((xv + rv).astype(np.float64), 4, scale, bias)
    assert_close(yv, ref.reshape(2, 4, -1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("heavy", ["dense", "conv2d"])
def test_a_norm_after_a_gemm_or_conv_does_not_take_it(rng, heavy):
    """A product is an anchor of its own: its bias and residual add are its epilogue, and the
    norm (layer_norm after a dense, group_norm_rows after a conv) stays a kernel of its own."""
    b = GraphBuilder()
    if heavy == "dense":
        x, res = b.input("x", (6, 16)), b.input("res", (6, 8))
        w, bias = rng.standard_normal((8, 16)).astype("float32"), rng.standard_normal(8).astype("float32")
        h = b.add(b.bias_add(b.dense(x, b.const(w)), b.const(bias), axis=1), res)
        y = b.layer_norm(h, b.const(np.ones(8, "float32")), b.const(np.zeros(8, "float32")))
        feeds = [rng.standard_normal((6, 16)).astype("float32"), rng.standard_normal((6, 8)).astype("float32")]
        ref = layer_norm(feeds[0].astype(np.float64) @ w.T + bias + feeds[1], 1, 0)
        products = ["dense", "bias_add", "add"]
    else:
        x = b.input("x", (1, 4, 6, 6))
        w = rng.standard_normal((8, 4, 3, 3)).astype("float32")
        h = b.relu(b.conv2d(x, b.const(w), padding=1))
        y = b.op("group_norm_rows", h, b.const(np.ones(8, "float32")), b.const(np.zeros(8, "float32")), groups=2)
        feeds = [rng.standard_normal((1, 4, 6, 6)).astype("float32")]
        ref = group_norm(np.maximum(conv2d(feeds[0], w, padding=1), 0), 2, np.ones(8), np.zeros(8)).reshape(1, 2, -1)
        products = ["conv2d", "relu"]
    g = b.build(y)
    groups = tefuse.fuse_graph(g)
    assert ops_of(groups) == [products, [g.outputs[0].op]]
    assert not groups[1].prologue
    cg, (yv,) = run(g, *feeds)
    assert cg.num_kernels == 2
    assert_close(yv, ref, rtol=1e-4, atol=1e-4)


def test_a_norms_prologue_is_asked_of_the_targets_rules(rng):
    """A norm's candidate prologue goes through the prologue policy like an anchor's
    (schedules.prologue_policy): refused there, the lookup stays a kernel of its own."""
    g, feeds, (ref,) = bert_embeddings(rng)
    asked = []

    def refuse_norms(c):
        asked.append(c)
        return c.anchor.anchor_kind != "norm"

    groups = tefuse.fuse_graph(g, prologue=refuse_norms)
    assert ops_of(groups)[-1] == ["layer_norm"] and len(groups) == 2
    assert asked and all(c.anchor.op == "layer_norm" for c in asked)
    assert any(p.op == "take" for c in asked for p in c.producers)
    cg, (y,) = run(g, *feeds, prologue=refuse_norms)
    assert cg.num_kernels == 2
    assert_close(y, ref, rtol=1e-5, atol=1e-5)


def test_softmax_still_takes_no_prologue(rng):
    """softmax is row-wise too but not in PROLOGUE_OPAQUE: its producer stays out."""
    b = GraphBuilder()
    x = b.input("x", (3, 8))
    g = b.build(b.softmax(b.mul(x, b.const(np.float32(0.5)))))
    assert ops_of(tefuse.fuse_graph(g)) == [["mul"], ["softmax"]]


# -- multi-output elementwise: Adam -------------------------------------------------------
def adam_graph(shape=(4, 8), lr=1e-2, b1=0.9, b2=0.999, eps=1e-8, dtype="float32"):
    b = GraphBuilder()
    p, gr, m, v = (b.input(n, shape, dtype) for n in ("param", "grad", "m", "v"))

    def c(x):
        return b.const(np.asarray(x, dtype))

    m2 = b.add(b.mul(c(b1), m), b.mul(c(1 - b1), gr), name="m_new")
    v2 = b.add(b.mul(c(b2), v), b.mul(c(1 - b2), b.square(gr)), name="v_new")
    upd = b.div(m2, b.add(b.sqrt(v2), c(eps)))
    p2 = b.sub(p, b.mul(c(lr), upd), name="param_new")
    return b.build([p2, m2, v2])


def adam_reference(p, g, m, v, lr=1e-2, b1=0.9, b2=0.999, eps=1e-8):
    p, g, m, v = (a.astype(np.float64) for a in (p, g, m, v))
    m2 = b1 * m + (1 - b1) * g
    v2 = b2 * v + (1 - b2) * g * g
    return p - lr * m2 / (np.sqrt(v2) + eps), m2, v2


def adam_inputs(rng, shape=(4, 8), dtype="float32"):
    p, g, m = (rng.standard_normal(shape).astype(dtype) for _ in range(3))
    v = rng.uniform(0.01, 1, shape).astype(dtype)
    return p, g, m, v


def test_adam_step_is_one_group_with_three_outputs(rng):
    g = adam_graph()
    groups = tefuse.fuse_graph(g)
    assert len(groups) == 1
    assert [o.name for o in groups[0].outputs] == ["param_new", "m_new", "v_new"] or \
        {o.name for o in groups[0].outputs} == {"param_new", "m_new", "v_new"}
    assert groups[0].anchor is None
    feeds = adam_inputs(rng)
    cg, outs = run(g, *feeds)
    assert cg.num_kernels == 1
    for got, ref, name in zip(outs, adam_reference(*feeds), ["param", "m", "v"]):
        assert_close(got, ref, rtol=1e-5, atol=1e-6, what=name)


def test_adam_step_repeated(rng):
    """Feeding outputs back in (a few steps) stays equal to the numpy loop."""
    cg = tefuse.build(adam_graph(), "llvm")
    p, gr, m, v = adam_inputs(rng)
    rp, rm, rv = p.astype(np.float64), m.astype(np.float64), v.astype(np.float64)
    for _ in range(3):
        p, m, v = cg.run(p, gr, m, v)
        rp, rm, rv = adam_reference(rp, gr, rm, rv)
    assert_close(p, rp, rtol=1e-5, atol=1e-5)
    assert_close(v, rv, rtol=1e-5, atol=1e-6)


def test_multi_output_off_splits_adam(rng):
    g = adam_graph()
    assert len(tefuse.fuse_graph(g, multi_output=False)) > 1
    check_against_unfused(g, adam_inputs(rng), rtol=1e-5, atol=1e-6)


# -- injective chains and reductions --------------------------------------------------------
def test_injective_chain_is_one_group(rng):
    b = GraphBuilder()
    x = b.input("x", (2, 3, 4))
    y = b.relu(b.add(b.reshape(b.transpose(x, axes=(0, 2, 1)), shape=(2, -1)), b.const(np.float32(1.0))))
    y = b.slice(b.concat(y, y, axis=1), starts=(-1,), ends=(-100,), axes=(1,), steps=(-2,))
    g = b.build(y)
    groups = tefuse.fuse_graph(g)
    assert len(groups) == 1
    xv = rng.standard_normal((2, 3, 4)).astype("float32")
    t = np.maximum(xv.transpose(0, 2, 1).reshape(2, -1) + 1, 0)
    ref = np.concatenate([t, t], axis=1)[:, ::-2]
    assert_close(run(g, xv)[1][0], ref)


@pytest.mark.parametrize("kind", ["sum", "mean", "max"])
def test_reduction_with_elementwise_producers(rng, kind):
    b = GraphBuilder()
    x = b.input("x", (3, 4, 5))
    y = b.op(f"reduce_{kind}", b.exp(b.mul(x, b.const(np.float32(0.5)))), axes=(1, 2))
    y = b.sqrt(y)
    g = b.build(y)
    groups = tefuse.fuse_graph(g)
    assert ops_of(groups) == [["mul", "exp", f"reduce_{kind}", "sqrt"]]
    assert groups[0].anchor.op == f"reduce_{kind}"
    xv = rng.standard_normal((3, 4, 5)).astype("float32")
    ref = np.sqrt(getattr(np, kind)(np.exp(0.5 * xv.astype(np.float64)), axis=(1, 2)))
    assert_close(run(g, xv)[1][0], ref)


def test_softmax_after_dense_bias(rng):
    b = GraphBuilder()
    x = b.input("x", (3, 8))
    w = rng.standard_normal((5, 8)).astype("float32")
    bias = rng.standard_normal(5).astype("float32")
    y = b.softmax(b.gelu(b.bias_add(b.dense(x, b.const(w)), b.const(bias), axis=1)))
    g = b.build(y)
    groups = tefuse.fuse_graph(g)
    assert ops_of(groups)[0] == ["dense", "bias_add", "gelu"]
    xv = rng.standard_normal((3, 8)).astype("float32")
    from tests.reference import gelu
    ref = softmax(gelu(xv.astype(np.float64) @ w.T + bias))
    assert_close(run(g, xv)[1][0], ref, rtol=1e-5, atol=1e-5)


def test_pool_epilogue_and_chain(rng):
    b = GraphBuilder()
    x = b.input("x", (1, 4, 8, 8))
    w = rng.standard_normal((4, 4, 3, 3)).astype("float32")
    y = b.relu(b.conv2d(x, b.const(w), padding=1))
    y = b.max_pool2d(y, kernel=2, strides=2)
    y = b.mul(y, b.const(np.float32(0.5)))
    y = b.global_avg_pool2d(y)
    y = b.flatten(y)
    g = b.build(y)
    groups = tefuse.fuse_graph(g)
    assert ops_of(groups)[0] == ["conv2d", "relu"]
    for gr in groups:
        anchors = [n for n in gr.nodes if n.pattern >= tefuse.ops.OpPattern.COMM_REDUCE]
        assert len(anchors) <= 1
    xv = rng.standard_normal((1, 4, 8, 8)).astype("float32")
    from tests.reference import pool2d
    t = pool2d(np.maximum(conv2d(xv, w, padding=1), 0), "max", (2, 2), (2, 2), (0, 0, 0, 0)) * 0.5
    assert_close(run(g, xv)[1][0], t.mean(axis=(2, 3)), rtol=1e-4, atol=1e-4)
    check_against_unfused(g, [xv], rtol=1e-4, atol=1e-4)


def test_two_convs_into_one_add_keep_one_anchor_per_group(rng):
    b = GraphBuilder()
    x = b.input("x", (1, 3, 5, 5))
    w1, w2 = (rng.standard_normal((4, 3, 3, 3)).astype("float32") for _ in range(2))
    y = b.relu(b.add(b.conv2d(x, b.const(w1), padding=1), b.conv2d(x, b.const(w2), padding=1)))
    g = b.build(y)
    groups = tefuse.fuse_graph(g)
    assert len(groups) == 2
    assert all(sum(n.op == "conv2d" for n in gr.nodes) == 1 for gr in groups)
    xv = rng.standard_normal((1, 3, 5, 5)).astype("float32")
    ref = np.maximum(conv2d(xv, w1, padding=1) + conv2d(xv, w2, padding=1), 0)
    assert_close(run(g, xv)[1][0], ref, rtol=1e-4, atol=1e-4)


def test_groups_are_topologically_ordered(rng):
    b = GraphBuilder()
    x = b.input("x", (1, 4, 6, 6))
    w = b.const(rng.standard_normal((4, 4, 3, 3)).astype("float32"))
    y = x
    for _ in range(3):
        y = b.relu(b.conv2d(y, w, padding=1))
    s = b.add(y, b.reduce_mean(y, axes=(2, 3), keepdims=True))
    groups = tefuse.fuse_graph(b.build(s))
    seen = set()
    for gr in groups:
        for i in gr.inputs:
            if i.is_op:
                assert id(i) in seen, f"{gr.name} reads {i.name} before it is produced"
        seen |= {id(n) for n in gr.nodes}


def _projection_back_to_batch_first(rng, axes=(1, 0, 2)):
    """A seq-first attention's output projection: [L*B, E] rows back to [B, L, E], plus the
    residual (torch's MultiheadAttention under a batch-first encoder, as ViT exports it)."""
    L, B, E = 5, 3, 8
    b = GraphBuilder()
    x, res = b.input("x", (L * B, E)), b.input("res", (B, L, E) if axes[-1] % 3 == 2 else (B, E, L))
    w = b.const(rng.standard_normal((E, E)).astype("float32"))
    y = b.reshape(b.bias_add(b.dense(x, w), b.const(rng.standard_normal(E).astype("float32")), axis=1),
                  shape=(L, B, E))
    return b.build(b.add(b.transpose(y, axes=axes), res)), (L * B, E), res.shape


@pytest.mark.parametrize("axes", [(1, 0, 2), (1, 0, -1)])
def test_a_gemm_epilogue_takes_a_row_permutation_and_the_residual(rng, axes):
    g, xs, rs = _projection_back_to_batch_first(rng, axes)
    groups = fuse_graph(g)
    assert ops_of(groups) == [["dense", "bias_add", "reshape", "transpose", "add"]]
    feeds = (rng.standard_normal(xs).astype("float32"), rng.standard_normal(rs).astype("float32"))
    check_against_unfused(g, feeds)


def test_a_transpose_that_moves_the_gemm_columns_stays_out_of_its_epilogue(rng):
    g, xs, rs = _projection_back_to_batch_first(rng, axes=(1, 2, 0))
    groups = ops_of(fuse_graph(g))
    assert groups[0] == ["dense", "bias_add", "reshape"] and "transpose" not in groups[0]
    feeds = (rng.standard_normal(xs).astype("float32"), rng.standard_normal(rs).astype("float32"))
    check_against_unfused(g, feeds)


@pytest.mark.parametrize("anchor", ["attention", "dense"])
def test_only_attention_takes_a_merge_of_its_last_two_axes(anchor):
    """Attention's merged heads ([B, L, H, D] -> [B, L, H*D]) join its epilogue: whole rows laid
    end to end, its head dim never padded. A GEMM's [M, N] -> [M*N] stays out: its padded
    columns, bounded by the merged index alone, would be written over the next row's values."""
    b = GraphBuilder()
    if anchor == "attention":
        q, k, v = (b.input(n, (2, 4, 16, 32), "float16") for n in "qkv")
        y = b.transpose(b.op("attention", q, k, v, alpha=0.125), axes=(0, 2, 1, 3))
    else:
        y = b.dense(b.input("x", (128, 64), "float16"), b.const(np.zeros((40, 64), np.float16)))
    merged = b.reshape(y, shape=(*y.shape[:-2], y.shape[-2] * y.shape[-1]))
    groups = fuse_graph(b.build(b.relu(merged)))
    assert [[n.op for n in g.nodes] for g in groups] == (
        [["attention", "transpose", "reshape", "relu"]] if anchor == "attention" else [["dense"], ["reshape", "relu"]])


def _quantized_shortcut(rng, into_add: bool, body: str = "float", swap: bool = False, also_out: str = ""):
    """A conv's output quantized and dequantized (QDQ); into_add: the dequantized value is a
    residual add's operand beside another conv's output (body "float"), that output's own QDQ
    ("codes": an onnxruntime QDQ model's add), or the QDQ of codes a third conv also reads
    ("shared": an identity shortcut's); else it is the graph's output. swap: the add reads the
    shortcut first; also_out "dq" / "body": that value is a graph output too."""
    b = GraphBuilder()
    x = b.input("x", (1, 4, 6, 6))
    scale, zero = b.const(np.array(0.05, "float32")), b.const(np.array(0, "int8"))

    def conv(name, data=x):
        return b.conv2d(data, b.const(rng.standard_normal((4, 4, 1, 1)).astype("float32")), name=name)

    def qdq(v):
        return b.op("dequantize_linear", b.op("quantize_linear", v, scale, zero, dtype="int8"), scale, zero)

    dq = qdq(conv("short"))
    if not into_add:
        return b.build(dq)
    other = conv("body")
    outs = []
    if body == "codes":
        other = qdq(other)
    elif body == "shared":
        codes = b.op("quantize_linear", other, scale, zero, dtype="int8")
        other = b.op("dequantize_linear", codes, scale, zero)
        outs = [conv("next", b.op("dequantize_linear", codes, scale, zero))]
    outs += {"dq": [dq], "body": [other]}.get(also_out, [])
    return b.build([b.relu(b.add(*((dq, other) if swap else (other, dq)))), *outs])


def test_codes_a_residual_add_reads_are_its_producers_output(rng):
    """The shortcut conv's kernel ends at its codes (int8, a byte an element) and the dequantize
    joins the add in the body's kernel; with nothing else to join, the dequantize stays in its
    producer's."""
    groups = tefuse.fuse_graph(_quantized_shortcut(rng, True))
    assert sorted(ops_of(groups)) == [["conv2d", "dequantize_linear", "add", "relu"],
                                      ["conv2d", "quantize_linear"]]
    assert ops_of(tefuse.fuse_graph(_quantized_shortcut(rng, False))) == [
        ["conv2d", "quantize_linear", "dequantize_linear"]]
    g = _quantized_shortcut(rng, True)
    check_against_unfused(g, [rng.standard_normal((1, 4, 6, 6)).astype("float32")])


@pytest.mark.parametrize("also_out", ["dq", "body"])
def test_a_graph_output_reads_the_value_it_names(rng, also_out):
    """The caller of a graph output is a reader: a dequantized shortcut, or a body, that is also
    an output ends no single-reader epilogue, so nothing stops at the codes and no kernel is
    added (three kernels, the dequantize on its own, when only ops counted)."""
    g = _quantized_shortcut(rng, True, also_out=also_out)
    groups = tefuse.fuse_graph(g)
    assert len(groups) == 2, ops_of(groups)
    x = rng.standard_normal((1, 4, 6, 6)).astype("float32")
    for got, want in zip(tefuse.build(g, "llvm").run(x), tefuse.build(g, "llvm", fuse=False).run(x)):
        np.testing.assert_array_equal(got, want)  # a kernel an op: no cut to share a rule with


def test_a_prologue_is_what_the_anchor_reads_whatever_the_adds_operand_order(rng):
    """add(shortcut, body) puts the shortcut's dequantize before the body conv in the group's
    order; it is still no prologue of the conv (a prologue keeps a dynamic build's split-K away,
    fusion/split_groups.py)."""
    for swap in (False, True):
        groups = tefuse.fuse_graph(_quantized_shortcut(rng, True, swap=swap))
        (taker,) = [g for g in groups if any(n.op == "add" for n in g.nodes)]
        assert taker.anchor.name == "body" and taker.prologue == [], swap


def test_of_two_dequantized_epilogues_one_takes_the_add_and_the_other_stores_codes(rng):
    """An onnxruntime QDQ model's residual add of two convs' dequantized codes: one conv's kernel
    takes the add, the other's stores its codes (before, the dequantized float); still two
    kernels."""
    groups = tefuse.fuse_graph(_quantized_shortcut(rng, True, "codes"))
    assert sorted(ops_of(groups)) == [
        ["conv2d", "quantize_linear"],
        ["conv2d", "quantize_linear", "dequantize_linear", "dequantize_linear", "add", "relu"]]


def test_codes_read_by_a_conv_too_leave_the_add_to_the_epilogue_it_was_in(rng):
    """An identity shortcut's codes (also read by the next conv) are no epilogue's: the short
    conv's kernel takes the add as before, and no kernel is added."""
    groups = tefuse.fuse_graph(_quantized_shortcut(rng, True, "shared"))
    taker = [g for g in groups if "add" in ops_of([g])[0]]
    assert len(taker) == 1 and taker[0].anchor.name == "short" and len(groups) == 3
