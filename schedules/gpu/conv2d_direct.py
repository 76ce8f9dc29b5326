"""CUDA direct conv2d template (NCHW and NHWC, grouped convs included; depthwise has its own).

The AutoTVM classic, in s_tir: each non-batch output dim is split four ways (block,
virtual thread, thread, per-thread), the input-channel reduction two ways; data and weight
tiles are staged in shared memory by all threads together at each outer reduction step,
with the padding/prologue stage computed on the way in; the epilogue runs from registers.
Shapes come from the anchor's Conv2dGeometry, the staged blocks by role (data, weight).
"""
from __future__ import annotations

import math

from tvm import s_tir

from ..space import Config, ConfigSpace

from ...target import device_caps
from ..common import (THREAD_AXES, annotate_unroll, attach_epilogue, cooperative_fetch, dtype_bytes, inline_all,
                      largest_divisor, loop_depth, read_index, spatial_reduce_loops, symbolic_batch_only)
from ..registry import DATA, WEIGHT, KernelInfo, Template, register

VTHREAD_AXES = ("vthread.z", "vthread.y", "vthread.x")
BLOCK_AXES = ("blockIdx.z", "blockIdx.y", "blockIdx.x")
MAX_DIM_THREADS = 32  # threads along one dim (the space's limit)
FALLBACK_BLOCK = 256  # threads per block the fallback aims at
FALLBACK_BLOCKS_PER_SM = 2  # outputs per thread grow only while the grid keeps this many blocks an SM
# most outputs per thread along the output channels (each input read serves several filters),
# then along the row
FALLBACK_INNER = {"channels": 4, "row": 2}


def _rc_extent(info: KernelInfo) -> int:
    return info.geometry.channels_per_group


def threads(v: dict) -> int:
    return v["tile_0"][2] * v["tile_1"][2] * v["tile_2"][2]


def shared_bytes(info: KernelInfo, v: dict) -> int:
    """The data and weight tiles a block of a conv with one group stages per outer reduction
    step, as TVM allocates them: rci channels of the input window its outputs cover, and its
    output channels' weights. (Of a grouped conv TVM keeps more than the groups a block's
    output channels touch: a floordiv it does not bound; `check_limits` measures those.)"""
    g = info.geometry
    block = [v[f"tile_{k}"][1] * v[f"tile_{k}"][2] * v[f"tile_{k}"][3] for k in range(3)]
    k_axis = 0 if g.layout == "NCHW" else 2
    bk = block[k_axis]
    bh, bw = (b for i, b in enumerate(block) if i != k_axis)
    rci = v["tile_rc"][1]
    ih = (bh - 1) * g.stride[0] + (g.kh - 1) * g.dilation[0] + 1
    iw = (bw - 1) * g.stride[1] + (g.kw - 1) * g.dilation[1] + 1
    return (rci * ih * iw + bk * rci * g.kh * g.kw) * dtype_bytes(info.dtype)


@register("gpu", "conv2d", priority=1)  # the fallback when preferences tie
class Conv2dDirect(Template):
    name = "conv2d_direct"
    horizontal = True  # plain grids: may share a launch (codegen/horizontal.py)

    def accepts(self, info: KernelInfo) -> bool:
        return info.geometry.split_k == 1  # split-K partials are the tensor-core templates'

    def takes_symbolic(self, info: KernelInfo) -> bool:
        """A symbolic batch: it is fused into blockIdx.z, the tiles split the fixed axes."""
        return symbolic_batch_only(info)

    def space(self, info: KernelInfo, target) -> ConfigSpace:
        s = ConfigSpace()
        for k, extent in enumerate(info.out_shape[1:]):
            s.define_split(f"tile_{k}", extent, 4,
                           filter=lambda c: c[1] <= 4 and c[2] <= 32 and c[3] <= 8)
        s.define_split("tile_rc", _rc_extent(info), 2, filter=lambda c: c[1] <= 32)
        s.define_knob("unroll", [0, 512, 1500])
        s.define_knob("unroll_explicit", [1, 0])
        # the product of the splits holds blocks past the device's limits: not worth a trial
        caps = device_caps(target)
        s.constrain(lambda v: threads(v) <= caps.max_threads_per_block)
        if info.geometry.groups == 1:
            s.constrain(lambda v: shared_bytes(info, v) <= caps.max_shared_memory_per_block)
        return s

    def fallback(self, info: KernelInfo, target, space: ConfigSpace) -> Config:
        """About FALLBACK_BLOCK threads, given to the dims innermost in memory first (coalesced
        loads and stores), then outputs per thread (register reuse) while the grid keeps every SM
        busy. A fixed per-dim thread count made blocks of 8 threads where a dim is 7 wide (a
        late stage's 7x7 maps: ResNeXt's grouped convs ran at a few percent of the CUDA cores).
        A grouped conv's block keeps its output channels inside one group, so it stages the
        input channels of that group alone."""
        g = info.geometry
        dims = list(info.out_shape[1:])
        k_axis = 0 if g.layout == "NCHW" else 2
        k_span = dims[k_axis] if g.groups == 1 else g.k // g.groups  # channels a block may cover
        threads, budget = [1, 1, 1], FALLBACK_BLOCK
        for k in (2, 1, 0):
            cap = min(MAX_DIM_THREADS, budget, k_span if k == k_axis else dims[k])
            threads[k] = largest_divisor(k_span if k == k_axis else dims[k], cap)
            budget //= threads[k]
        inner = [1, 1, 1]
        blocks = g.n * math.prod(d // t for d, t in zip(dims, threads))
        row_axis = 2 if g.layout == "NCHW" else 1
        for k, most in ((k_axis, FALLBACK_INNER["channels"]), (row_axis, FALLBACK_INNER["row"])):
            extent = (k_span if k == k_axis else dims[k]) // threads[k]
            i = largest_divisor(extent, most)
            while i > 1 and blocks // i < FALLBACK_BLOCKS_PER_SM * device_caps(target).sm_count:
                i = largest_divisor(extent, i - 1)
            inner[k] = i
            blocks //= i
        vals = {f"tile_{k}": (dims[k] // (threads[k] * inner[k]), 1, threads[k], inner[k]) for k in range(3)}
        rc = _rc_extent(info)
        ri = largest_divisor(rc, 8)
        vals["tile_rc"] = (rc // ri, ri)
        vals["unroll"] = 512
        vals["unroll_explicit"] = 1
        return space.from_values(vals)

    def apply(self, sch: s_tir.Schedule, info: KernelInfo, cfg: Config, target) -> None:
        anchor = info.anchor_block
        conv = sch.get_sblock(anchor)
        staged = info.staged(DATA, WEIGHT)
        inline_all(sch, info, keep=staged)
        data_buf, weight_buf = info.operands[DATA], info.operands[WEIGHT]
        reads = [read_index(sch, conv, data_buf), read_index(sch, conv, weight_buf)]

        sp, rd = spatial_reduce_loops(sch, conv)
        n, dims = sp[0], sp[1:]
        tiles = [sch.split(l, factors=list(cfg[f"tile_{k}"])) for k, l in enumerate(dims)]
        rc_pos = info.geometry.rc_axis
        rco, rci = sch.split(rd[rc_pos], factors=list(cfg["tile_rc"]))
        window = [l for k, l in enumerate(rd) if k != rc_pos]
        sch.reorder(n, *[t[0] for t in tiles], *[t[1] for t in tiles], *[t[2] for t in tiles],
                    rco, rci, *window, *[t[3] for t in tiles])
        sch.bind(sch.fuse(n, tiles[0][0]), BLOCK_AXES[0])
        for k in (1, 2):
            sch.bind(tiles[k][0], BLOCK_AXES[k])
        for k in range(3):
            sch.bind(tiles[k][1], VTHREAD_AXES[k])
            sch.bind(tiles[k][2], THREAD_AXES[k])
        attach_epilogue(sch, info, anchor, tiles[2][2], "local")

        threads = [cfg[f"tile_{k}"][2] for k in range(3)]
        depth = loop_depth(sch, conv, rco)
        for idx, role in zip(reads, (DATA, WEIGHT)):
            cache = sch.cache_read(conv, idx, "shared")
            sch.compute_at(cache, rco)
            if info.stage(role) in staged:  # computed on the way into shared memory
                sch.compute_inline(sch.get_sblock(info.stage(role)))
            cooperative_fetch(sch, cache, depth, threads)
        annotate_unroll(sch, rco, cfg["unroll"], cfg["unroll_explicit"])



