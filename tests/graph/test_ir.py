"""Graph IR: text form, shape/dtype inference, and errors that name the offending node."""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse import GraphBuilder, GraphError
from tefuse.graph.ir import Graph


def _conv_graph():
    b = GraphBuilder()
    x = b.input("x", (1, 3, 8, 8))
    w = b.const(np.zeros((4, 3, 3, 3), "float32"), name="w")
    bias = b.const(np.zeros(4, "float32"), name="bias")
    c = b.conv2d(x, w, padding=1, strides=2, name="conv")
    r = b.relu(b.bias_add(c, bias, name="badd"), name="act")
    f = b.reshape(r, shape=(1, -1), name="flat")
    return b.build([r, f])


def test_text_form_contents():
    text = _conv_graph().text()
    lines = text.splitlines()
    assert lines[0] == "graph(%x: float32[1,3,8,8]) {"
    assert "  %w = constant() : float32[4,3,3,3]" in lines
    assert "  %bias = constant() : float32[4]" in lines
    assert "  %conv = conv2d(%x, %w, strides=2, padding=1) : float32[1,4,4,4]" in lines
    assert "  %badd = bias_add(%conv, %bias) : float32[1,4,4,4]" in lines
    assert "  %act = relu(%badd) : float32[1,4,4,4]" in lines
    assert "  %flat = reshape(%act, shape=[1,-1]) : float32[1,64]" in lines
    assert lines[-2] == "  return %act, %flat"
    assert lines[-1] == "}"
    assert str(_conv_graph()) == text


def test_text_form_is_topological():
    lines = _conv_graph().text().splitlines()
    pos = {ln.split("=")[0].strip(): k for k, ln in enumerate(lines) if " = " in ln}
    assert pos["%w"] < pos["%conv"] < pos["%badd"] < pos["%act"] < pos["%flat"]


def test_text_form_shows_non_default_attrs_only():
    b = GraphBuilder()
    x = b.input("x", (2, 8))
    y = b.leaky_relu(x, alpha=0.2, name="a")
    z = b.leaky_relu(y, name="b")
    text = b.build(z).text()
    assert "%a = leaky_relu(%x, alpha=0.2) : float32[2,8]" in text
    assert "%b = leaky_relu(%a) : float32[2,8]" in text


SHAPES = [
    ("conv2d", [(1, 3, 9, 9), (8, 3, 3, 3)], dict(strides=2, padding=(1, 0, 0, 1)), (1, 8, 4, 4), "float32"),
    ("conv2d", [(2, 9, 9, 4), (3, 3, 1, 4)], dict(groups=4, layout="NHWC", dilation=2), (2, 5, 5, 4), "float32"),
    ("dense", [(5, 7), (3, 7)], {}, (5, 3), "float32"),
    ("matmul", [(2, 1, 3, 4), (5, 4, 6)], {}, (2, 5, 3, 6), "float32"),
    ("matmul", [(4,), (4,)], {}, (), "float32"),
    ("max_pool2d", [(1, 2, 7, 7)], dict(kernel=3, strides=2, ceil_mode=True), (1, 2, 3, 3), "float32"),
    ("max_pool2d", [(1, 2, 8, 8)], dict(kernel=3, strides=2, ceil_mode=True), (1, 2, 4, 4), "float32"),
    ("global_avg_pool2d", [(1, 6, 5, 4)], {}, (1, 6, 1, 1), "float32"),
    ("reduce_sum", [(2, 3, 4)], dict(axes=(1,)), (2, 4), "float32"),
    ("reduce_mean", [(2, 3, 4)], dict(axes=(-1, 0), keepdims=True), (1, 3, 1), "float32"),
    ("add", [(2, 1, 4), (3, 1)], {}, (2, 3, 4), "float32"),
    ("concat", [(2, 3), (2, 5)], dict(axis=1), (2, 8), "float32"),
    ("slice", [(10, 4)], dict(starts=(8,), ends=(1,), steps=(-3,)), (3, 4), "float32"),
    ("cast", [(2, 2)], dict(dtype="float16"), (2, 2), "float16"),
    ("flatten", [(2, 3, 4, 5)], dict(axis=2), (6, 20), "float32"),
    ("transpose", [(2, 3, 4)], {}, (4, 3, 2), "float32"),
    ("layout_transform", [(1, 3, 4, 5)], {}, (1, 4, 5, 3), "float32"),
    ("expand_dims", [(2, 3)], dict(axes=(0, -1)), (1, 2, 3, 1), "float32"),
    ("pad", [(2, 3)], dict(pads=(1, 0, 2, 3)), (5, 6), "float32"),
]


@pytest.mark.parametrize("op,shapes,attrs,out,dtype", SHAPES, ids=[f"{s[0]}{k}" for k, s in enumerate(SHAPES)])
def test_shape_inference(op, shapes, attrs, out, dtype):
    b = GraphBuilder()
    ins = [b.input(f"i{k}", s) for k, s in enumerate(shapes)]
    n = b.op(op, *ins, **attrs)
    assert n.shape == out
    assert n.dtype == dtype
    assert n.type_str() == f"{dtype}[{','.join(map(str, out))}]"


def test_float16_propagates():
    b = GraphBuilder()
    x = b.input("x", (1, 4, 6, 6), "float16")
    w = b.const(np.zeros((4, 4, 3, 3), "float16"))
    assert b.relu(b.conv2d(x, w)).dtype == "float16"


# -- errors --------------------------------------------------------------------------------
def test_error_wrong_shapes_names_node():
    b = GraphBuilder()
    x = b.input("x", (1, 3, 8, 8))
    w = b.input("w", (4, 5, 3, 3))
    with pytest.raises(GraphError) as e:
        b.conv2d(x, w, name="conv_a")
    msg = str(e.value)
    assert "'conv_a'" in msg and "conv2d" in msg
    assert "x: float32[1,3,8,8]" in msg and "w: float32[4,5,3,3]" in msg  # the inputs, with types


def test_error_broadcast_names_node():
    b = GraphBuilder()
    x, y = b.input("x", (2, 3)), b.input("y", (4,))
    with pytest.raises(GraphError, match=r"'sum1'.*do not broadcast"):
        b.add(x, y, name="sum1")


def test_error_unknown_op_names_node():
    b = GraphBuilder()
    x = b.input("x", (2, 3))
    with pytest.raises(tefuse.TefuseError, match=r"'mystery'.*frobnicate|frobnicate.*'mystery'"):
        b.op("frobnicate", x, name="mystery")


def test_error_unknown_op_via_attribute():
    b = GraphBuilder()
    with pytest.raises(tefuse.TefuseError, match="unknown op 'frobnicate'"):
        b.frobnicate


def test_error_unknown_op_suggests():
    b = GraphBuilder()
    x = b.input("x", (2, 3))
    with pytest.raises(tefuse.TefuseError, match="did you mean.*relu"):
        b.op("relux", x)


def test_error_unknown_attribute_names_node_and_attr():
    b = GraphBuilder()
    x = b.input("x", (2, 3))
    with pytest.raises(GraphError, match=r"'act'.*unknown attribute.*'alpah'.*known: \['alpha'\]"):
        b.leaky_relu(x, alpah=0.1, name="act")


def test_error_wrong_number_of_inputs():
    b = GraphBuilder()
    x = b.input("x", (2, 3))
    with pytest.raises(GraphError, match=r"'r'.*relu takes 1 input"):
        b.relu(x, x, name="r")


def test_error_oihw_weight_given_to_nhwc_conv():
    b = GraphBuilder()
    x = b.input("x", (1, 8, 8, 16))
    w = b.const(np.zeros((32, 16, 3, 3), "float32"), name="w")  # OIHW
    with pytest.raises(GraphError) as e:
        b.conv2d(x, w, layout="NHWC", padding=1, name="conv_nhwc")
    msg = str(e.value)
    assert "'conv_nhwc'" in msg and "HWIO" in msg and "OIHW" in msg


def test_error_nchw_data_given_to_nhwc_conv():
    b = GraphBuilder()
    x = b.input("x", (1, 16, 8, 8))  # NCHW data
    w = b.const(np.zeros((3, 3, 16, 32), "float32"), name="w")  # HWIO
    with pytest.raises(GraphError, match=r"'conv_x'.*needs 8"):
        b.conv2d(x, w, layout="NHWC", name="conv_x")


def test_error_bad_groups():
    b = GraphBuilder()
    x = b.input("x", (1, 6, 8, 8))
    w = b.input("w", (4, 2, 3, 3))
    with pytest.raises(GraphError, match=r"'g'.*groups=4"):
        b.conv2d(x, w, groups=4, name="g")


def test_error_dtype_mismatch_names_node():
    b = GraphBuilder()
    x = b.input("x", (1, 3, 8, 8), "float16")
    w = b.input("w", (4, 3, 3, 3))
    with pytest.raises(GraphError, match=r"'c'.*dtype"):
        b.conv2d(x, w, name="c")


def test_error_duplicate_names():
    b = GraphBuilder()
    x = b.input("x", (2, 3))
    with pytest.raises(GraphError, match="'x' used twice"):
        b.input("x", (2, 3))
    b.relu(x, name="r")
    with pytest.raises(GraphError, match="'r' used twice"):
        b.sigmoid(x, name="r")
    with pytest.raises(GraphError, match="'x' used twice"):
        b.const(np.zeros(3, "float32"), name="x")


def test_error_duplicate_names_across_builders():
    b1, b2 = GraphBuilder(), GraphBuilder()
    x = b1.input("x", (2, 3))
    y = b2.input("y", (2, 3))
    a = b1.relu(x, name="same")
    c = b2.relu(y, name="same")
    s = b1.add(a, c, name="s")
    with pytest.raises(GraphError, match="duplicate node names.*same"):
        Graph([x, y], [s])


def test_error_undeclared_input():
    b1, b2 = GraphBuilder(), GraphBuilder()
    u = b1.input("u", (2,))
    v = b2.relu(u, name="v")
    with pytest.raises(GraphError, match=r"\['u'\].*not declared"):
        b2.build(v)


def test_error_bad_input_shape():
    b = GraphBuilder()
    with pytest.raises(GraphError, match="'x'"):
        b.input("x", (2, 0))


def test_error_non_node_input():
    b = GraphBuilder()
    x = b.input("x", (2,))
    with pytest.raises(GraphError, match="graph nodes"):
        b.add(x, 1.0)


def test_refused_node_leaves_name_free():
    b = GraphBuilder()
    x = b.input("x", (2, 3))
    with pytest.raises(GraphError):
        b.reshape(x, shape=(4,), name="r")
    assert b.reshape(x, shape=(6,), name="r").shape == (6,)


def test_consumers_and_lookup():
    g = _conv_graph()
    cons = g.consumers()
    assert [c.name for c in cons[g.node("act")]] == ["flat"]
    assert [c.name for c in cons[g.node("x")]] == ["conv"]
    assert [n.name for n in g.constants] == ["w", "bias"]
    with pytest.raises(GraphError, match="nope"):
        g.node("nope")


def test_with_constants_binds_inputs_and_checks_them():
    b = GraphBuilder()
    x, w = b.input("x", (2, 3)), b.input("w", (3, 4))
    g = b.build(b.matmul(x, w))
    wv = np.arange(12, dtype="float32").reshape(3, 4)
    got = g.with_constants({"w": wv})
    assert [i.name for i in got.inputs] == ["x"] and [c.name for c in got.constants] == ["w"]
    xv = np.ones((2, 3), "float32")
    np.testing.assert_allclose(tefuse.build(got, "llvm").run(x=xv)[0], xv @ wv)
    with pytest.raises(GraphError, match="input 'w' is float32\\[3,4\\], got float64"):
        g.with_constants({"w": wv.astype("float64")})
    with pytest.raises(GraphError, match="no graph input named \\['v'\\]"):
        g.with_constants({"v": wv})


def test_rewrite_replaces_as_the_rule_says_and_names_clear_every_input():
    """`rewrite`: a rule's replacement is wired into every consumer and output; a fresh name
    avoids the graph's inputs, the unused ones too."""
    from tefuse.graph.ir import fresh_name, op_node, rewrite

    b = GraphBuilder()
    x = b.input("x", (4,))
    b.input("y_neg", (4,))  # unused by any op
    y = b.relu(x, name="y")
    g = b.build([b.add(y, y, name="z"), y])

    def rule(n, inputs, ctx):
        if n.name != "y":
            return None
        neg = op_node(fresh_name(ctx.names, "y_neg"), "neg", inputs, {})
        return op_node("y", "neg", [neg], {})

    r = rewrite(g, rule)
    assert r.node("z").inputs == [r.outputs[1], r.outputs[1]] and r.outputs[1].op == "neg"
    assert r.outputs[1].inputs[0].name == "y_neg_1"


def test_reader_counts_count_a_graph_output_as_read_by_the_caller():
    b = GraphBuilder()
    x = b.input("x", (2, 3))
    y = b.relu(x)
    z = b.add(y, y)
    g = b.build([z, y])
    counts = g.reader_counts()
    assert (counts[id(x)], counts[id(y)], counts[id(z)]) == (1, 3, 1)
