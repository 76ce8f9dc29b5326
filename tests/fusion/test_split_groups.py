"""A fused conv group cut into a split-K pair (fusion/split_groups.py): the partial sums of its
anchor alone, then their split_sum with the group's epilogue, reading what the group read and
writing its outputs in order; a group whose product reads a value computed in it stays whole."""
from __future__ import annotations

import numpy as np

from tefuse.fusion import fuse_graph
from tefuse.fusion.split_groups import split_group
from tefuse.graph import GraphBuilder


def _conv_block(residual_out: bool = False):
    """conv -> bias -> add residual -> relu, NHWC fp16 (the conv's output also a graph output
    where `residual_out`: fusion then leaves the conv alone)."""
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x, r = b.input("x", (2, 7, 7, 32), "float16"), b.input("r", (2, 7, 7, 16), "float16")
    c = b.conv2d(x, b.const(rng.standard_normal((16, 3, 3, 32)).astype("float16")), padding=1, layout="NHWC",
                 weight_layout="OHWI")
    y = b.relu(b.add(b.bias_add(c, b.const(rng.standard_normal(16).astype("float16")), axis=3), r))
    return b.build([y, c] if residual_out else y)


def test_the_pair_splits_the_anchor_and_keeps_the_epilogue_and_the_outputs():
    (group,) = fuse_graph(_conv_block())
    partial, total = split_group(group, 4)
    (p,) = partial.nodes
    assert partial.anchor is p and p.attrs["split_k"] == 4 and p.shape == (4, 2, 7, 7, 16) and p.dtype == "float32"
    assert partial.inputs == list(group.anchor.inputs) and partial.outputs == [p]
    assert total.anchor.op == "split_sum" and total.anchor.inputs == [p] and total.anchor.name == group.anchor.name
    assert [n.op for n in total.nodes] == ["split_sum", "bias_add", "add", "relu"]
    # the residual and the bias: what the group read besides the conv's operands
    assert total.inputs[0] is p and total.inputs[1:] == [i for i in group.inputs if i not in group.anchor.inputs]
    assert {i.name for i in total.inputs[1:]} >= {"r"} and len(total.inputs) == 3
    assert [o.name for o in total.outputs] == [o.name for o in group.outputs]
    assert all(o.shape == g.shape and o.dtype == g.dtype for o, g in zip(total.outputs, group.outputs))


def test_a_product_alone_splits_into_its_partials_and_their_sum():
    """The conv's output read outside its block: fusion leaves it alone, and its sum is the output."""
    group = next(g for g in fuse_graph(_conv_block(residual_out=True)) if g.anchor is not None)
    assert group.nodes == [group.anchor]
    _, total = split_group(group, 2)
    assert total.nodes == [total.anchor] and total.outputs == [total.anchor]
    assert total.anchor.name == group.anchor.name and total.anchor.shape == group.anchor.shape


def test_a_group_with_a_prologue_stays_whole():
    (group,) = fuse_graph(_conv_block())
    group.prologue = [group.nodes[-1]]  # a value computed in the kernel before the product
    assert split_group(group, 4) is None
