"""Grouped convs made dense on a block-diagonal weight (graph/grouped.py): same numbers, and only
the convs the tensor cores should take."""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse.driver import prepare_graph
from tefuse.graph import GraphBuilder
from tefuse.errors import GraphError
from tefuse.graph.grouped import (MIN_GROUP_CHANNELS, block_diagonal, convert_weight, dense_grouped_convs,
                                  dense_weight_inputs)
from tefuse.schedules.cuda.gemm.tiles import MIN_MN
from tefuse.schedules.policy import DENSE_GROUPS
from tests.reference import assert_close, conv2d


@pytest.mark.parametrize("groups,cg,kg,g", [(32, 4, 4, 32), (32, 8, 8, 4), (4, 16, 8, 2), (6, 3, 5, 3)])
@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
def test_a_block_diagonal_weight_computes_the_grouped_conv(groups, cg, kg, g, layout):
    """Merging g groups of `groups` (all of them: a dense conv) gives the grouped conv's sums."""
    rng = np.random.default_rng(groups * cg + kg)
    shape = (3, 3, cg, groups * kg) if layout == "NHWC" else (groups * kg, cg, 3, 3)
    w = rng.standard_normal(shape)
    x = rng.standard_normal((2, 5, 6, groups * cg) if layout == "NHWC" else (2, groups * cg, 5, 6))
    wl = "HWIO" if layout == "NHWC" else "OIHW"
    merged = block_diagonal(w, groups, g, wl)
    want = conv2d(x, w, padding=1, layout=layout, groups=groups)
    got = conv2d(x, merged, padding=1, layout=layout, groups=groups // g)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert np.count_nonzero(merged) == np.count_nonzero(w), "values outside the original groups"


def test_merging_needs_a_divisor_of_the_groups():
    with pytest.raises(ValueError, match="3 does not divide 8"):
        block_diagonal(np.ones((3, 3, 4, 32)), 8, 3, "HWIO")


def _grouped(groups, cg, kg, dtype="float16", hw=6, n=2, const=True):
    rng = np.random.default_rng(groups + cg + kg)
    b = GraphBuilder()
    x = b.input("x", (n, hw, hw, groups * cg), dtype)
    wv = (rng.standard_normal((3, 3, cg, groups * kg)) / np.sqrt(9 * cg)).astype(dtype)
    w = b.const(wv, name="w") if const else b.input("w", wv.shape, dtype)
    y = b.conv2d(x, w, padding=1, layout="NHWC", groups=groups, name="conv")
    return b.build(b.relu(b.bias_add(y, b.const(rng.standard_normal(groups * kg).astype(dtype)), axis=3))), wv


def _conv(graph):
    (conv,) = [n for n in graph.nodes if n.op == "conv2d"]
    return conv


@pytest.mark.parametrize("groups,cg,kg", [(32, 4, 4), (32, 8, 8), (8, 16, 32)])
def test_the_dense_conv_computes_what_the_grouped_one_did(groups, cg, kg):
    """ResNeXt 32x4d's and 32x8d's first-stage groups, and wide groups, built for llvm."""
    g, wv = _grouped(groups, cg, kg)
    dense = dense_grouped_convs(g, max_groups=DENSE_GROUPS, min_mn=MIN_MN)
    conv = _conv(dense)
    assert conv.attrs["groups"] == 1 and conv.inputs[1].shape == (3, 3, groups * cg, groups * kg)
    x = np.random.default_rng(1).standard_normal(g.inputs[0].shape).astype("float16")
    bias = next(c.value for c in g.constants if c.shape == (groups * kg,)).astype(np.float64)
    want = np.maximum(conv2d(x.astype(np.float64), wv.astype(np.float64), padding=1, layout="NHWC",
                             groups=groups) + bias, 0)
    (got,) = tefuse.build(dense, "llvm").run(x=x)
    assert_close(got, want, "float16", what=f"groups={groups} cg={cg} kg={kg}")


@pytest.mark.parametrize("why,kw", [
    ("depthwise", dict(groups=64, cg=1, kg=1)),
    ("tiny groups", dict(groups=16, cg=MIN_GROUP_CHANNELS // 2, kg=4)),
    ("too many groups", dict(groups=2 * DENSE_GROUPS, cg=4, kg=4)),
    ("float32 (CUDA cores)", dict(groups=32, cg=4, kg=4, dtype="float32")),
    ("a run-time weight", dict(groups=32, cg=4, kg=4, const=False)),
    ("under one tile of outputs", dict(groups=4, cg=4, kg=2)),
])
def test_other_convs_stay_grouped(why, kw):
    g, _ = _grouped(**kw)
    assert dense_grouped_convs(g, max_groups=DENSE_GROUPS, min_mn=MIN_MN) is g, why


def test_a_shared_weight_is_expanded_once():
    b = GraphBuilder()
    x = b.input("x", (1, 4, 4, 128), "float16")
    w = b.const(np.ones((3, 3, 4, 128), "float16"), name="w")
    y = b.add(b.conv2d(x, w, padding=1, layout="NHWC", groups=32), b.conv2d(b.relu(x), w, padding=1,
                                                                           layout="NHWC", groups=32))
    dense = dense_grouped_convs(b.build(y), max_groups=DENSE_GROUPS, min_mn=MIN_MN)
    a, c = [n for n in dense.nodes if n.op == "conv2d"]
    assert a.attrs["groups"] == c.attrs["groups"] == 1 and a.inputs[1] is c.inputs[1]


@pytest.mark.parametrize("target,dense", [("cuda:sm_90", True), ("cuda:sm_80", True), ("llvm", False)])
def test_the_targets_policy_decides(target, dense):
    """An NCHW model's grouped conv in fp16: dense (and on Hopper OHWI) where the tensor cores
    take it, grouped on the CPU."""
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x = b.input("x", (2, 256, 7, 7))
    w = b.const(rng.standard_normal((256, 8, 3, 3)).astype("float32"))
    g = prepare_graph(b.build(b.conv2d(x, w, padding=1, groups=32)), target, precision="fp16")
    conv = _conv(g)
    assert conv.attrs["groups"] == (1 if dense else 32)
    assert (conv.attrs.get("weight_layout") == "OHWI") == (target == "cuda:sm_90")


def test_a_run_time_weight_converts_to_dense_and_back():
    w = np.random.default_rng(3).standard_normal((3, 3, 4, 16))
    dense = convert_weight(w, "HWIO", "OHWI:dense4")
    np.testing.assert_array_equal(dense, block_diagonal(w, 4, 4, "HWIO").transpose(3, 0, 1, 2))
    np.testing.assert_array_equal(convert_weight(dense, "OHWI:dense4", "HWIO"), w)
    np.testing.assert_array_equal(convert_weight(w, "HWIO", "OHWI"), w.transpose(3, 0, 1, 2))


def test_a_dense_weight_input_must_be_only_its_convs_weight():
    b = GraphBuilder()
    x = b.input("x", (1, 4, 4, 16), "float16")
    w = b.input("w", (3, 3, 4, 16), "float16")
    y = b.conv2d(x, w, padding=1, layout="NHWC", groups=4)
    g = b.build([y, b.relu(w)])
    with pytest.raises(GraphError, match="reads w, which is not only the weight of a conv of 4 groups"):
        dense_weight_inputs(g, {"w": 4})
    dense = dense_weight_inputs(b.build(y), {"w": 4})
    assert dense.inputs[1].shape == (3, 3, 16, 16) and _conv(dense).attrs["groups"] == 1
