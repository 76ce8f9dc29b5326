"""Build precision on the CPU: fp16/bf16 graphs keep their float32 interface, convert weights
once, keep statistics in float32, and match numpy within the precision's tolerance."""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse.errors import BuildError, GraphError
from tefuse.graph import GraphBuilder
from tefuse.graph.precision import convert_precision


def _conv_chain(rng, layout="NCHW"):
    b = GraphBuilder()
    shape = (2, 16, 12, 12) if layout == "NCHW" else (2, 12, 12, 16)
    x = b.input("x", shape)
    w = rng.standard_normal((32, 16, 3, 3) if layout == "NCHW" else (3, 3, 16, 32)).astype("float32") * 0.1
    y = b.conv2d(x, b.const(w, name="w"), padding=1, layout=layout)
    y = b.relu(b.bias_add(y, b.const(rng.standard_normal(32).astype("float32"), name="bias"),
                          axis=1 if layout == "NCHW" else 3))
    return b.build(y), shape


def _mlp_softmax(rng):
    b = GraphBuilder()
    x = b.input("x", (4, 64))
    h = b.relu(b.dense(x, b.const(rng.standard_normal((48, 64)).astype("float32") * 0.2, name="w1")))
    return b.build(b.softmax(b.dense(h, b.const(rng.standard_normal((10, 48)).astype("float32") * 0.2,
                                                name="w2")), axis=-1)), (4, 64)


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
@pytest.mark.parametrize("make", [_conv_chain, _mlp_softmax], ids=["conv_chain", "mlp_softmax"])
def test_low_precision_matches_fp32_within_tolerance(make, precision):
    rng = np.random.default_rng(0)
    g, shape = make(rng)
    x = rng.standard_normal(shape).astype("float32")
    want = tefuse.build(g, "llvm").run(x)[0]
    cg = tefuse.build(g, "llvm", precision=precision)
    got = cg.run(x)[0]
    assert got.dtype == np.float32 and got.shape == want.shape
    scale = np.abs(want).max()
    err = np.abs(got - want).max() / scale
    assert err < (4e-3 if precision == "fp16" else 3e-2), err  # fp16 has 11 bits, bf16 8
    assert err > 0  # it really computed in lower precision
    assert cg.num_kernels == tefuse.build(g, "llvm").num_kernels  # the casts fused, no kernel of their own


def test_conversion_keeps_interface_converts_weights_and_keeps_softmax_in_float32():
    g, _ = _mlp_softmax(np.random.default_rng(1))
    h = convert_precision(g, "fp16")
    assert [i.dtype for i in h.inputs] == ["float32"] and [o.dtype for o in h.outputs] == ["float32"]
    assert [o.name for o in h.outputs] == [o.name for o in g.outputs]
    consts = {n.name: n for n in h.nodes if n.op == "constant"}
    assert consts["w1"].dtype == "float16" and consts["w1"].value.dtype == np.float16
    dense = [n for n in h.nodes if n.op == "dense"]
    assert all(n.dtype == "float16" for n in dense)
    (sm,) = [n for n in h.nodes if n.op == "softmax"]
    assert sm.dtype == "float32" and sm.inputs[0].op == "cast"


def test_fp32_and_an_fp16_graph_are_left_alone():
    g, _ = _conv_chain(np.random.default_rng(2))
    assert convert_precision(g, "fp32") is g
    b = GraphBuilder()
    x = b.input("x", (1, 8), "float16")
    h = b.build(b.relu(x))
    assert [n.dtype for n in convert_precision(h, "fp16").nodes] == ["float16", "float16"]


def test_unknown_and_unsupported_precisions_are_refused_by_name():
    g, _ = _conv_chain(np.random.default_rng(3))
    with pytest.raises(GraphError, match="unknown precision 'fp8'"):
        tefuse.build(g, "llvm", precision="fp8")
    with pytest.raises(BuildError, match="tf32 is not supported yet"):
        tefuse.build(g, "llvm", precision="tf32")


def test_fusion_plan_compiles_to_one_fp16_kernel_with_float32_arguments():
    from tefuse.plan import FusionPlan, TensorDesc

    rng = np.random.default_rng(4)
    plan = FusionPlan(TensorDesc((1, 8, 10, 10)))
    conv = plan.add_conv(TensorDesc((16, 8, 3, 3)), padding=1)
    bias = plan.add_bias()
    plan.add_activation("relu")
    x = rng.standard_normal((1, 8, 10, 10)).astype("float32")
    w = rng.standard_normal((16, 8, 3, 3)).astype("float32") * 0.2
    bv = rng.standard_normal(16).astype("float32")
    args = plan.new_args()
    args.set_conv(conv, w)
    args.set_bias(bias, bv)
    want = plan.compile("llvm").execute(x, args)
    got = plan.compile("llvm", precision="fp16").execute(x, args)
    assert plan.compiled.num_kernels == 1 and got.dtype == np.float32
    assert 0 < np.abs(got - want).max() / np.abs(want).max() < 4e-3
