"""Lowering a fused group to one PrimFunc: parameters, folded scalars, stages and KernelInfo."""
from __future__ import annotations

import re

import numpy as np
import pytest

import tefuse
from tefuse import GraphBuilder
from tefuse.codegen.lower import lower_group
import tvm
from tvm import s_tir
from tests.fusion.test_fuse_ops import adam_graph
from tests.reference import assert_close, conv2d


def blocks(func) -> list[str]:
    sch = s_tir.Schedule(func)
    return [sch.get(b).name_hint for b in sch.get_child_blocks(sch.get_sblock("root"))]


def only_group(g):
    groups = tefuse.fuse_graph(g)
    assert len(groups) == 1, [gr.describe() for gr in groups]
    return groups[0]


def _conv_with_prologue_and_epilogue():
    b = GraphBuilder()
    h = b.input("h", (1, 4, 6, 6), "float16")
    w = b.const(np.ones((4, 4, 3, 3), "float32"), name="w")
    two = b.const(np.float32(2.0), name="two")
    y = b.conv2d(b.cast(h, dtype="float32"), w, padding=1)
    return b.build(b.relu(b.mul(y, two), name="out"))


def test_conv_group_lowers_to_one_func():
    g = _conv_with_prologue_and_epilogue()
    lg = lower_group(only_group(g))
    # scalar constants are folded into the expression, not passed
    assert [p.name for p in lg.params] == ["h", "w"]
    assert len(lg.func.params) == 3  # h, w, out
    # the prologue (cast) folds into pad_temp, the epilogue into the output block
    assert blocks(lg.func) == ["pad_temp", "conv2d", "out_out"]
    info = lg.info
    assert info.anchor_kind == "conv2d" and info.anchor_block == "conv2d"
    assert info.inline_blocks == ["pad_temp"]
    assert info.reduce_blocks == ["conv2d"] and info.output_blocks == ["out_out"]
    assert info.out_shape == (1, 4, 6, 6) and info.attrs["padding"] == 1
    script = lg.func.script()
    assert "float16" in script and "T.Cast" in script


def test_depthwise_anchor_kind():
    b = GraphBuilder()
    x = b.input("x", (1, 8, 6, 6))
    y = b.conv2d(x, b.const(np.ones((8, 1, 3, 3), "float32")), groups=8, padding=1)
    assert lower_group(only_group(b.build(y))).info.anchor_kind == "depthwise_conv2d"


def test_float16_conv_accumulates_in_float32():
    b = GraphBuilder()
    x = b.input("x", (1, 4, 6, 6), "float16")
    y = b.conv2d(x, b.const(np.ones((4, 4, 3, 3), "float16")), padding=1)
    lg = lower_group(only_group(b.build(y)))
    sch = s_tir.Schedule(lg.func)
    conv = sch.get(sch.get_sblock("conv2d"))
    assert str(conv.writes[0].source.dtype) == "float32"
    assert lg.info.dtype == "float16"


def test_adam_is_one_multi_output_block():
    from tefuse.schedules.common import outer_nests

    lg = lower_group(only_group(adam_graph()))
    outs = ["fused_out_v0", "fused_out_v1", "fused_out_v2"]
    assert blocks(lg.func) == outs  # one block per result ...
    assert len(outer_nests(s_tir.Schedule(lg.func))) == 1  # ... all in one loop nest
    assert len(lg.func.params) == 7
    assert lg.info.anchor_kind == "injective" and lg.info.output_blocks == outs


def test_anchor_that_is_also_a_group_output():
    """The conv result leaves the group (read by another group) and feeds the epilogue."""
    b = GraphBuilder()
    x = b.input("x", (1, 3, 5, 5))
    w = np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype("float32")
    c = b.conv2d(x, b.const(w), padding=1, name="c")
    r = b.relu(c, name="r")
    s = b.reduce_sum(c, axes=(1,), name="s")
    g = b.build([r, s])
    xv = np.random.default_rng(1).standard_normal((1, 3, 5, 5)).astype("float32")
    ref = conv2d(xv, w, padding=1)
    rv, sv = tefuse.build(g, "llvm").run(xv)
    assert_close(rv, np.maximum(ref, 0), rtol=1e-4, atol=1e-4)
    assert_close(sv, ref.sum(axis=1), rtol=1e-4, atol=1e-4)


def test_passthrough_output_is_copied():
    """An output that is a group input unchanged (reshape to the same shape) is materialised."""
    b = GraphBuilder()
    x = b.input("x", (2, 3))
    r = b.reshape(x, shape=(2, 3), name="r")
    g = b.build([r, b.relu(x, name="q")])
    xv = np.arange(-3, 3, dtype="float32").reshape(2, 3)
    rv, qv = tefuse.build(g, "llvm").run(xv)
    np.testing.assert_array_equal(rv, xv)
    np.testing.assert_array_equal(qv, np.maximum(xv, 0))


def test_duplicate_output_values_get_their_own_buffers():
    b = GraphBuilder()
    x = b.input("x", (4,))
    e = b.exp(x, name="e")
    g = b.build([e, b.identity(e, name="e2")])
    xv = np.linspace(-1, 1, 4).astype("float32")
    ev, e2 = tefuse.build(g, "llvm").run(xv)
    assert_close(ev, np.exp(xv.astype(np.float64)))
    assert_close(e2, np.exp(xv.astype(np.float64)))


def test_lowering_error_names_group_and_node(monkeypatch):
    from tefuse.errors import OpError
    from tefuse.ops import registry

    b = GraphBuilder()
    x = b.input("x", (4,))
    g = b.build(b.relu(x, name="bad"))
    (gr,) = tefuse.fuse_graph(g)
    orig = registry._REGISTRY["relu"]

    def boom(inputs, attrs):
        raise OpError("boom")

    monkeypatch.setitem(registry._REGISTRY, "relu", registry.OpDef("relu", orig.pattern, boom))
    with pytest.raises(tefuse.BuildError, match=r"group g0_relu: node 'bad' \(relu\): boom"):
        lower_group(gr)

    def refused(inputs, attrs):  # as TVM refuses an expression (isnan of bfloat16 did)
        raise tvm.error.InternalError("Data type T.bfloat16 not supported for isnan op.\n  stack...")

    monkeypatch.setitem(registry._REGISTRY, "relu", registry.OpDef("relu", orig.pattern, refused))
    with pytest.raises(tefuse.BuildError, match=r"node 'bad' \(relu\): TVM cannot compute it: Data type "
                                                  r"T.bfloat16 not supported for isnan op.$"):
        lower_group(gr)


def test_conv_with_prologue_stages_by_role():
    """Roles come from the structure: the block feeding the accumulator's data operand (the
    padded input with the cast folded in), the accumulator, the epilogue; a weight read from a
    parameter has no stage."""
    from tefuse.ops.conv2d import Conv2dGeometry

    info = lower_group(only_group(_conv_with_prologue_and_epilogue())).info
    assert info.stages == {"accumulator": "conv2d", "data": "pad_temp"}
    assert info.stage("data") == "pad_temp" and info.stage("weight") is None
    assert info.operands == {"data": "pad_temp", "weight": "in_w"}
    assert info.staged("data", "weight") == ["pad_temp"] and info.epilogue == ["out_out"]
    assert isinstance(info.geometry, Conv2dGeometry) and (info.geometry.k, info.geometry.oh) == (4, 6)
    with pytest.raises(KeyError):
        info.stage("pad_temp")


def test_weight_prologue_is_the_weight_stage():
    b = GraphBuilder()
    x = b.input("x", (1, 4, 6, 6))
    w = b.input("w", (4, 4, 3, 3))
    y = b.conv2d(b.relu(x), b.mul(w, b.const(np.float32(0.5))), padding=1)
    info = lower_group(only_group(b.build(y))).info
    assert info.stage("data") == "pad_temp" and info.stage("weight") == "weight_in"
    assert info.staged("data", "weight") == ["pad_temp", "weight_in"]
    assert info.stage("accumulator") == info.anchor_block == "conv2d"


def test_dense_roles_and_geometry():
    from tefuse.ops.dense import GemmGeometry

    b = GraphBuilder()
    x = b.input("x", (8, 16))
    y = b.dense(b.relu(x), b.const(np.ones((32, 16), "float32"), name="w"))
    info = lower_group(only_group(b.build(b.relu(y)))).info
    assert info.stage("data") == "data_in" and info.stage("weight") is None
    assert info.geometry == GemmGeometry(1, 8, 32, 16, b_nk=True)


def test_a_symbolic_group_indexes_64_bit_and_sizes_its_info_at_the_hint():
    from tefuse.fusion import fuse_graph
    from tefuse.ops.value import dim_hints

    b = tefuse.GraphBuilder()
    x = b.input("x", ("N", 16))
    g = b.build(b.softmax(b.relu(x)))
    with dim_hints({"N": 12}):
        lowered = [lower_group(grp) for grp in fuse_graph(g)]
    softmax = lowered[-1]
    assert softmax.info.symbolic and softmax.info.out_shape == (12, 16)
    script = softmax.func.script()
    assert re.search(r"in_\w+: T\.Buffer\(\(N, T\.int64\(16\)\)", script), script  # N: a run-time size, int64


def _concat_bn_relu_reference(vals, graph, axis):
    """numpy's concat + batch-norm (the graph's constants, float64) + ReLU."""
    gamma, beta, mean, var = (n.value.astype(np.float64) for n in graph.constants)
    shape = [1] * 4
    shape[axis] = -1
    x = np.concatenate([v.astype(np.float64) for v in vals], axis=axis)
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + 1e-5) * gamma.reshape(shape) + beta.reshape(shape)
    return np.maximum(y, 0)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("segs, axis", [((64, 32, 32), 3), ((12, 20, 5), 3), ((16, 8, 3), 1), ((8, 3), 2)],
                         ids=["nhwc_whole_vectors", "nhwc_partial", "axis1", "axis2"])
def test_a_concat_fused_with_batch_norm_and_relu_matches_numpy(rng, segs, axis, dtype):
    """A concat stays a stage of its own in an anchorless group (a template inlines it or
    computes it a vector at a time); the values are numpy's either way."""
    from tests.schedules.gpu.test_injective import concat_bn_relu

    g = concat_bn_relu(segs, axis, dtype, rest=(2, 5, 8))
    (group,) = tefuse.fuse_graph(g)
    info = lower_group(group).info
    assert len(info.pick_stages) == 1 and info.pick_stages[0] in info.inline_blocks
    vals = [rng.standard_normal(i.shape).astype(dtype) for i in g.inputs]
    assert_close(tefuse.build(g).run(*vals)[0], _concat_bn_relu_reference(vals, g, axis), dtype)


def test_a_concat_that_is_the_output_or_an_anchors_prologue_is_no_stage():
    b = GraphBuilder()
    x, y = b.input("x", (1, 4, 6, 6)), b.input("y", (1, 4, 6, 6))
    assert lower_group(only_group(b.build(b.concat(x, y, axis=1)))).info.pick_stages == []
    w = b.const(np.ones((4, 8, 3, 3), "float32"), name="w")
    lowered = lower_group(only_group(b.build(b.conv2d(b.concat(x, y, axis=1), w, padding=1))))
    assert lowered.info.anchor_kind == "conv2d" and lowered.info.pick_stages == []
