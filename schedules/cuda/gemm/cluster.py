"""Which products the wgmma template splits inside the kernel (cluster split-K): a deep reduction
over a grid too small to fill the GPU, its slices computed by the CTAs of a thread-block cluster
and added through distributed shared memory (sliced_k.py, passes/cluster_sum.py). The graph's
split-K (graph/split_k.py, a second kernel) leaves these products to the kernel; it learns which
through the policy this package gives the graph (schedules/policy.py).

The (tile, slices) pairs are tried in order, the largest tile first: these grids are bound by the
operand bytes read through L2, and a larger tile reads fewer of them. A pair is taken where its
CTAs fill 7/10 of the SMs or more without a second wave, each slice at least CLUSTER_MIN_DEPTH
deep. Measured on an H100 (fp16, batch 16, against the untuned unsplit kernel): 512x7x7->512 3x3,
128x128 in 4 slices 14.8 us (two kernels in 4 slices 17.2, unsplit 24.7); 2048x7x7->512, 64x128
in 2 8.8 (64x64 unsplit 9.5; 128x128 in 4, 512 deep a slice, 10.0); 256x14x14 3x3, 128x128 in 2
13.8 (64x128 14.1); 1024x14x14->256 (1024 deep) gained nothing (64x64 7.5, 128x128 in 2 8.8).
"""
from __future__ import annotations

import math
from typing import Optional

from .tiles import MIN_MN

CLUSTER_TILES = (((128, 128), 4), ((128, 128), 2), ((64, 128), 2))
CLUSTER_MIN_TOTAL = 2048
CLUSTER_MIN_DEPTH = 1024


def tiles(m: int, n: int, bm: int, bn: int) -> int:
    """Tiles of a BM x BN tiling of an M x N output."""
    return math.ceil(m / bm) * math.ceil(n / bn)


def cluster_split(m: int, n: int, depth: int, channels: int, lanes: int, sms: int) -> Optional[tuple]:
    """((BM, BN), slices) of the in-kernel cluster split for an M x N output `depth` deep whose
    innermost reduction axis has `channels` (each slice takes whole 16-byte vectors of them), or
    None. 16-bit operands only (8 lanes a vector): the path is measured for fp16 and bf16. A tile
    is taken only with M at least one tile and N whole tiles (the slices' sum spreads a tile's full
    width over a warp, sliced_k.stage_sum). Convs only (the graph asks for convs alone): the sum
    computes the epilogue 4 lanes wide, which a Linear's GELU (erf, scalarized) would not allow."""
    if lanes != 8 or depth < CLUSTER_MIN_TOTAL or m < MIN_MN or n < MIN_MN:
        return None
    for (bm, bn), s in CLUSTER_TILES:
        ctas = tiles(m, n, bm, bn) * s
        if (7 * sms <= 10 * ctas and ctas <= sms and depth // s >= CLUSTER_MIN_DEPTH
                and channels % (lanes * s) == 0 and m >= bm and n % bn == 0):
            return (bm, bn), s
    return None
