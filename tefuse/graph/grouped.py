"""Grouped convs computed dense on the tensor cores: a block-diagonal weight at build time.

A grouped conv (ResNeXt's 3x3 convs: 32 groups of 4 to 32 channels) reduces over its group's
channels only, which the implicit-GEMM tensor-core templates do not take (their B tile would
span several groups, each reading other input channels): it ran on `conv2d_direct`, on CUDA
cores. ResNeXt-50 32x4d's last-stage grouped conv (batch 32, 7x7, 1024 channels) took 1.3 ms on
the H100 that way, about 0.7 TFLOP/s.

This pass merges the groups of such a conv with a constant weight: G groups of Cg input and Kg
output channels become G/g groups of g*Cg and g*Kg, the merged weight block-diagonal (zero outside
each original group), so the conv computes the same sums plus products by zero. With g = G it is
a dense conv (groups=1) that the tensor-core templates (mma.sync, wgmma) take as they are; it
multiplies g times as much, far less than the tensor cores' lead over the direct conv (dense fp16
runs at hundreds of TFLOP/s there). `merged_groups` chooses g: G itself, where

- G is at most `max_groups` (GraphPolicy.dense_groups): the work grows G-fold, and so does the
  weight (ResNeXt-50's last stage: 18.9 MB in fp16 instead of 0.6);
- a group holds at least MIN_GROUP_CHANNELS input channels: a conv with fewer (and a depthwise
  one, Cg == 1, which has its own template) does so little arithmetic per input it reads that
  the direct conv is near its bandwidth bound, and G-fold products would not pay;
- the conv is one the tensor-core path takes: NHWC (what the layout pass gives tensor-core
  precisions), an fp16/bf16 (or tf32) weight, M and K at least one tile (`min_mn`).

A template that took groups as a grid axis would want g only as large as makes g*Kg a whole
number of its N tiles; `block_diagonal` merges by any g dividing G for that.
"""
from __future__ import annotations

import logging

import numpy as np

from .ir import CONST, Graph, Node, RewriteContext, fresh_name, op_node, rewrite
from .weights import tensor_core_operand

log = logging.getLogger(__name__)

MIN_GROUP_CHANNELS = 4  # ResNeXt 32x4d's first stage; fewer channels a group stay grouped


def block_diagonal(w: np.ndarray, groups: int, g: int, layout: str) -> np.ndarray:
    """A grouped conv's weight (HWIO [kh, kw, Cg, K] or OIHW [K, Cg, kh, kw], `groups` groups)
    as the weight of `groups // g` groups: each merged group's g*Cg inputs by g*Kg outputs, the
    original groups on its diagonal, zeros elsewhere."""
    if groups % g:
        raise ValueError(f"merging {g} groups of {groups}: {g} does not divide {groups}")
    v = w if layout == "HWIO" else w.transpose(2, 3, 1, 0)  # OIHW -> HWIO
    kh, kw, cg, k = v.shape
    kg = k // groups
    out = np.zeros((kh, kw, g * cg, k), dtype=v.dtype)
    for j in range(groups):  # original group j sits at block j % g of merged group j // g
        b = j % g
        out[:, :, b * cg:(b + 1) * cg, j * kg:(j + 1) * kg] = v[:, :, :, j * kg:(j + 1) * kg]
    return out if layout == "HWIO" else np.ascontiguousarray(out.transpose(3, 2, 0, 1))


def merged_groups(n: Node, *, max_groups: int, min_mn: int) -> int:
    """How many groups of conv `n` to merge into one (1: none; the module docstring's rule)."""
    if n.op != "conv2d" or n.attrs.get("layout") != "NHWC" or n.attrs.get("weight_layout"):
        return 1
    geo, w = n.geometry, n.inputs[1]
    if (geo.groups == 1 or geo.groups > max_groups or geo.channels_per_group < MIN_GROUP_CHANNELS
            or w.op != CONST or not tensor_core_operand(n, w) or geo.split_k != 1):
        return 1
    return geo.groups if geo.k >= min_mn and geo.m >= min_mn else 1


def dense_grouped_convs(graph: Graph, *, max_groups: int, min_mn: int) -> Graph:
    """The graph with each grouped conv that `merged_groups` picks computed with fewer groups (a
    dense conv where all merge) on a block-diagonal constant weight; other nodes unchanged."""
    if not any(merged_groups(n, max_groups=max_groups, min_mn=min_mn) > 1 for n in graph.nodes):
        return graph
    merged: dict[tuple[int, int], Node] = {}  # one block-diagonal copy per weight, however many convs read it

    def rule(n: Node, inputs: list[Node], ctx: RewriteContext) -> Node | None:
        g = merged_groups(n, max_groups=max_groups, min_mn=min_mn)
        if g == 1:
            return None
        w, groups = inputs[1], n.geometry.groups
        if (id(w), g) not in merged:
            v = block_diagonal(np.asarray(w.value), groups, g, "HWIO")
            suffix = "dense" if g == groups else f"g{groups // g}"
            merged[id(w), g] = Node(fresh_name(ctx.names, f"{w.name}_{suffix}"), CONST, [], {}, v.shape, w.dtype, v)
        out = op_node(n.name, n.op, [inputs[0], merged[id(w), g]], {**n.attrs, "groups": groups // g})
        log.debug("%s: %d groups of %d channels computed as %d (block-diagonal weight)", n.name, groups,
                  n.geometry.channels_per_group, groups // g)
        assert out.shape == n.shape, f"{n.name}: merging groups changed its shape {n.shape} -> {out.shape}"
        return out

    return rewrite(graph, rule)
