"""Split-K for convs and Linears whose output gives the GPU too few tiles (ResNet's 7x7 and 14x14
layers at small batches, ViT's MLP down-projection at batch 1): the product computes S partial
sums over slices of its reduction (conv2d's input channels, a Linear's K: `split_k`, a leading
[S] axis in float32, an int8 product's in int32) and a `split_sum` adds them up, its epilogue
fused. cuBLAS and cuDNN pick split-K kernels for such shapes the same way.

Why: at batch 1, ResNet-50's 512-channel 3x3 conv is a 49 x 512 x 4608 implicit GEMM, four
64x128 tiles for 132 SMs, each walking a 4608-deep reduction. Sixteen slices give 64 tiles of
288; the partials cost 1.6 MB of float32 traffic. Decided per conv from the GPU's SM count and
the tensor-core templates' untuned tiles (`SplitPolicy`), only for tensor-core dtypes (NHWC convs,
Linears reading their weight [N, K]), int8 and float8 products included: their partial sums are
int32 (added exactly) and float32.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable, Optional, Sequence

from ..ops.split_k import SUM_DTYPES
from .ir import Graph, Node, RewriteContext, fresh_name, op_node, rewrite
from .weights import one_byte_operand, tensor_core_operand, vector_lanes


@dataclass(frozen=True)
class SplitPolicy:
    """When and how far to split. sms: the GPU's SMs (a split aims at a block for each);
    min_total: the shortest reduction split at all (16 of the template's 64-deep steps: a
    shorter one is over too soon for the slices to pay for the second kernel's launch and
    traffic); min_depth: reduction elements a slice keeps at least (four steps, so its copy
    pipeline still overlaps); max_splits bounds the float32 partials' traffic. force: a slice
    count used wherever the channels allow it, whatever the grid (build's split_k=N: to measure
    a count against the policy's, as cuBLAS's split-K setting does; 0: the policy decides).
    full_depth: the shortest reduction split where unsplit 64x64 tiles already fill 3/4 of the
    SMs (below). min_mn: the smallest M and N a tensor-core tile takes. in_kernel: where the
    template splits a reduction inside its kernel (Hopper's cluster split-K), a predicate on
    (m, n, depth, channels, lanes, sms) that the graph's split then leaves alone; None: nowhere."""

    sms: int
    min_mn: int
    min_total: int = 1024
    min_depth: int = 256
    max_splits: int = 16
    force: int = 0
    # where unsplit 64x64 tiles already give 3/4 of the SMs a block (the template's untuned tile
    # for such grids), the shortest reduction still split: there a 64-deep step of a block alone
    # on its SM takes ~0.33 us, and a split adds ~6 us (float32 partials, the second kernel) while
    # its slices run two blocks an SM at ~0.6 us a step, so it pays past ~35 steps. H200
    # (about 100 blocks each: 2048x7x7->512 at batch 16, 2048 deep:
    # unsplit 10.3 us, in 4 slices 11.0; 1024x14x14->256 at batch 8, 1024 deep: 6.7 against 9.6;
    # 256x14x14 3x3 at batch 8, 2304 deep: 13.4 against 12.2; 512x7x7 3x3 at batch 16, 4608
    # deep: 24.2 against 17.6)
    full_depth: int = 2304
    in_kernel: Optional[Callable[[int, int, int, int, int, int], bool]] = None

    def blocks(self, m: int, n: int) -> int:
        """Tiles of 64 x 128 (64 x 64 where N <= 64), the tensor-core templates' untuned config
        for a small grid (schedules/cuda/gemm/wgmma.fallback_values; the half-full test counts these, as
        the policy was first measured against 64 x 128; `splits` counts 64 x 64 tiles, which the
        template takes for grids under half the SMs, for its full_depth rule)."""
        return _tiles(m, n, 64, 64 if n <= 64 else 128)

    def splits(self, m: int, n: int, depth: int, channels: int, lanes: int) -> int:
        """The fewest slices (a power of two) that give every SM a block, as many as the depth
        and the channels' 16-byte chunks allow; 1 where the grid is already half full, where
        64x64 tiles fill 3/4 of the SMs and the reduction is under full_depth, or where the
        kernel splits it itself (`in_kernel`)."""
        if m < self.min_mn or n < self.min_mn:  # a GEMV (an SE block's 1x1 conv, a decode step): no tensor-core tile
            return 1
        if self.force:  # whole 16-byte chunks of channels a slice
            s = self.force
            return s if channels % s == 0 and (channels // s) % lanes == 0 else 1
        if self.in_kernel is not None and self.in_kernel(m, n, depth, channels, lanes, self.sms):
            return 1
        blocks = self.blocks(m, n)
        # the depths below count 16-bit elements: a one-byte operand's 128-deep tile row is one
        # step as a 16-bit one's 64 is (int8, float8 codes), so its depth counts half
        depth = depth * 8 // max(lanes, 8)
        if 2 * blocks > self.sms or depth < self.min_total:
            return 1
        if 4 * _tiles(m, n, 64, 64) >= 3 * self.sms and depth < self.full_depth:
            return 1  # unsplit 64x64 tiles already fill 3/4 of the SMs, over too soon to split
        best, s = 1, 2
        while (s <= self.max_splits and channels % s == 0 and (channels // s) % lanes == 0
               and depth // s >= self.min_depth):
            best = s
            if blocks * s >= self.sms:
                break
            s *= 2
        return best


def _tiles(m: int, n: int, bm: int, bn: int) -> int:
    """Tiles of a BM x BN tiling of an M x N output."""
    return math.ceil(m / bm) * math.ceil(n / bn)


def splittable(n: Node, w: Node) -> bool:
    """A tensor-core product (one-byte operands included) whose sum `split_sum` can take: an
    int8 product summing into int32 (`out_dtype`), not one that wraps in int8."""
    return (tensor_core_operand(n, w) or one_byte_operand(n, w)) and n.dtype in SUM_DTYPES


def conv_splits(n: Node, policy: SplitPolicy) -> int:
    """How many slices `policy` gives conv node `n` (1: none)."""
    if (n.op != "conv2d" or n.attrs.get("layout") != "NHWC" or n.attrs.get("groups", 1) != 1
            or n.attrs.get("split_k", 1) != 1):
        return 1
    w = n.inputs[1]
    if not splittable(n, w):
        return 1
    g = n.geometry  # its implicit GEMM: M pixels, K output channels, R = ky * kx * C deep
    return policy.splits(g.m, g.k, g.r, g.c, vector_lanes(w.dtype))


def matmul_splits(n: Node, policy: SplitPolicy) -> int:
    """How many slices `policy` gives a Linear (matmul by a [N, K] weight, graph/weights.py)."""
    if n.op != "matmul" or not n.attrs.get("trans_b") or n.attrs.get("split_k", 1) != 1:
        return 1
    w = n.inputs[1]
    if not splittable(n, w) or float(n.attrs.get("alpha", 1.0)) != 1.0:
        return 1
    g = n.geometry  # a's rows (batch dims included) by N, K deep (Linears are never split in the kernel)
    return replace(policy, in_kernel=None).splits(g.m, g.n, g.k, g.k, vector_lanes(w.dtype))


SPLITTERS = {"conv2d": conv_splits, "matmul": matmul_splits}  # op -> its slice count


def splits_of(n: Node, policy: SplitPolicy) -> int:
    """How many slices `policy` gives node `n` (1: none, or not a product it splits)."""
    return SPLITTERS[n.op](n, policy) if n.op in SPLITTERS else 1


def split_node(n: Node, inputs: Sequence[Node], splits: int, names: set[str]) -> Node:
    """`n` (a conv or Linear over `inputs`) as its partial sums in `splits` slices, then their
    split_sum named as `n` (the partials take a fresh name from `names`)."""
    partial = op_node(fresh_name(names, f"{n.name}_split"), n.op, list(inputs), {**n.attrs, "split_k": splits})
    return op_node(n.name, "split_sum", [partial], {"dtype": n.dtype})


def split_k(graph: Graph, policy: SplitPolicy) -> Graph:
    """The graph with each conv or Linear that `policy` splits as op(split_k=S) -> split_sum."""
    chosen = {id(n): s for n in graph.nodes if (s := splits_of(n, policy)) > 1}
    if not chosen:
        return graph

    def rule(n: Node, inputs: list[Node], ctx: RewriteContext) -> Node | None:
        s = chosen.get(id(n))
        return None if s is None else split_node(n, inputs, s, ctx.names)

    return rewrite(graph, rule)
