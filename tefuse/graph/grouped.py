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

A FusionPlan's run-time weight follows the same rule (`input_dense_candidate`): the plan declares
it dense (`dense_weight_inputs`, `dense_layout`) and its arguments expand the user's grouped
weight once, when it is set (`convert_weight`).

A template that took groups as a grid axis would want g only as large as makes g*Kg a whole
number of its N tiles; `block_diagonal` merges by any g dividing G for that.
"""
from __future__ import annotations

import logging

import numpy as np

from .ir import CONST, INPUT, Graph, Node, RewriteContext, fresh_name, op_node, rewrite
from .weights import form_weight, is_form_layout, redeclared_weight_inputs, tensor_core_operand, to_layout

log = logging.getLogger(__name__)

MIN_GROUP_CHANNELS = 4  # ResNeXt 32x4d's first stage; fewer channels a group stay grouped


def _zeros(like, shape):
    """Zeros shaped `shape` of `like`'s kind: numpy, or a torch tensor on its device."""
    return like.new_zeros(shape) if hasattr(like, "new_zeros") else np.zeros(shape, dtype=like.dtype)


def block_diagonal(w, groups: int, g: int, layout: str):
    """A grouped conv's weight (HWIO [kh, kw, Cg, K] or OIHW [K, Cg, kh, kw], `groups` groups)
    as the weight of `groups // g` groups: each merged group's g*Cg inputs by g*Kg outputs, the
    original groups on its diagonal, zeros elsewhere. A numpy array, or (HWIO) a torch tensor."""
    if groups % g:
        raise ValueError(f"merging {g} groups of {groups}: {g} does not divide {groups}")
    v = w if layout == "HWIO" else w.transpose(2, 3, 1, 0)  # OIHW -> HWIO
    kh, kw, cg, k = v.shape
    kg = k // groups
    out = _zeros(v, (kh, kw, g * cg, k))
    for j in range(groups):  # original group j sits at block j % g of merged group j // g
        b = j % g
        out[:, :, b * cg:(b + 1) * cg, j * kg:(j + 1) * kg] = v[:, :, :, j * kg:(j + 1) * kg]
    return out if layout == "HWIO" else np.ascontiguousarray(out.transpose(3, 2, 0, 1))


def diagonal_blocks(w, groups: int):
    """The inverse of a full merge: a dense HWIO weight's `groups` diagonal blocks as the
    grouped conv's HWIO weight [kh, kw, C/groups, K]."""
    kh, kw, c, k = w.shape
    cg, kg = c // groups, k // groups
    out = _zeros(w, (kh, kw, cg, k))
    for j in range(groups):
        out[:, :, :, j * kg:(j + 1) * kg] = w[:, :, j * cg:(j + 1) * cg, j * kg:(j + 1) * kg]
    return out


def _dense_rule(n: Node, max_groups: int, min_mn: int) -> bool:
    """The module docstring's rule, whatever the weight is (a constant or a run-time argument)."""
    if n.op != "conv2d" or n.attrs.get("layout") != "NHWC" or n.attrs.get("weight_layout"):
        return False
    geo = n.geometry
    return (1 < geo.groups <= max_groups and geo.channels_per_group >= MIN_GROUP_CHANNELS and geo.split_k == 1
            and tensor_core_operand(n, n.inputs[1]) and geo.k >= min_mn and geo.m >= min_mn)


def merged_groups(n: Node, *, max_groups: int, min_mn: int) -> int:
    """How many groups of conv `n` to merge into one (1: none): all of them, where its weight is
    a constant and the rule holds."""
    return n.geometry.groups if _dense_rule(n, max_groups, min_mn) and n.inputs[1].op == CONST else 1


def input_dense_candidate(n: Node, *, max_groups: int, min_mn: int) -> bool:
    """Whether grouped conv `n`, whose weight is a graph input (a FusionPlan's run-time weight),
    should read it dense: the constant pass's rule; the caller expands the argument
    (`convert_weight`) when it is set."""
    return _dense_rule(n, max_groups, min_mn) and n.inputs[1].op == INPUT


def dense_weight_inputs(graph: Graph, groups: dict[str, int]) -> Graph:
    """The graph with each HWIO weight input named in `groups` ({name: its conv's groups})
    declared dense [kh, kw, C, K] (same name) and the convs reading it made groups=1."""
    swapped = {}
    for i in graph.inputs:
        if i.name in groups:
            kh, kw, cg, k = i.shape
            swapped[i.name] = Node(i.name, INPUT, [], dict(i.attrs), (kh, kw, cg * groups[i.name], k), i.dtype)
    return redeclared_weight_inputs(graph, swapped, {"groups": 1},
                                    lambda n: n.attrs.get("groups") == groups[n.inputs[1].name],
                                    lambda name: f"the weight of a conv of {groups[name]} groups")


DENSE = ":dense"  # a run-time weight's layout suffix: a grouped weight held dense, e.g. "OHWI:dense32"


def dense_layout(layout: str, groups: int) -> str:
    """`layout` for a weight held dense where it has `groups` > 1 groups, else `layout` itself."""
    return f"{layout}{DENSE}{groups}" if groups > 1 else layout


def split_layout(layout: str) -> tuple[str, int]:
    """(the axes' layout, the groups it holds dense; 1 for none): "OHWI:dense32" -> ("OHWI", 32)."""
    axes, _, groups = layout.partition(DENSE)
    return axes, int(groups) if groups else 1


def convert_weight(v, src: str, dst: str):
    """A run-time conv weight held in layout `src` as `dst` (4-letter layouts, optionally held
    dense: `dense_layout`): through HWIO, its groups taken off the diagonal or put on it."""
    (s, gs), (d, gd) = split_layout(src), split_layout(dst)
    if (s, gs) == (d, gd):
        return v
    if is_form_layout(s) or is_form_layout(d):  # a padded form (weights.ConvForm): made from HWIO, one way
        if is_form_layout(s) or gs > 1 or gd > 1:
            raise ValueError(f"a conv weight cannot be converted from {src} to {dst}")
        return form_weight(to_layout(v, s, "HWIO") if s != "HWIO" else v, d)
    for axes, layout in ((s, src), (d, dst)):
        if sorted(axes) != sorted("HWIO"):
            raise ValueError(f"unknown conv weight layout {layout!r}")
    v = to_layout(v, s, "HWIO") if s != "HWIO" else v
    if gs != gd:
        v = diagonal_blocks(v, gs) if gs > 1 else v
        v = block_diagonal(v, gd, gd, "HWIO") if gd > 1 else v
    return to_layout(v, "HWIO", d) if d != "HWIO" else v


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
