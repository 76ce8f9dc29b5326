"""CUDA depthwise conv2d template (NCHW and NHWC, channel multiplier >= 1).

Depthwise conv has no channel reduction: each output is a KHxKW window over one input
channel, so the kernel is memory-bound and the schedule is about coalescing, parallelism
and reusing each input element across the windows that overlap it:

* the output is tiled channel x OH x OW (in memory order after the batch dim): each dim is
  split three ways (block, thread, outputs per thread); all block parts and the batch are
  fused onto blockIdx.x, the thread parts go to threadIdx.z/y/x with the innermost memory
  dim (OW for NCHW, channels for NHWC) on threadIdx.x, so a warp reads and writes
  consecutive addresses;
* knob `stage`: "shared" stages the block's input tile (halo included) in shared memory,
  loaded by all threads together with the padding and any fused prologue computed on the
  way in; "global" reads the window straight from global memory (the L1 cache does the
  reuse) with the padding computed in the load;
* each thread keeps its weights (c_inner x KH x KW) and its accumulators in registers;
  outputs per thread along OH/OW let overlapping windows share loaded inputs;
* stage "rows" (NHWC): each thread holds a 16-byte vector of channels for a few outputs along
  OW and, for each window row, loads that row's input columns once as 16-byte vectors into
  registers (its weight row too), then does every multiply of the row from registers: one
  load per input column and row instead of one 2-byte load per multiply;
* knob `unroll_window`: explicit unroll of the KHxKW window loops (the per-thread output
  loops are always unrolled: their accumulators must stay in registers);
* the fused epilogue (bias, batch norm, activation, residual...) runs from the registers
  under the thread loop (`attach_epilogue`), so the group is exactly one kernel.

Window, strides and channel multiplier come from the anchor's Conv2dGeometry, the padded
input and a weight prologue by role (data, weight), the block limits from DeviceCaps.
"""
from __future__ import annotations

import logging

from tvm import s_tir

from ...ops.conv2d import Conv2dGeometry
from ...target import device_caps
from ..space import Config, ConfigSpace

from ..common import (THREAD_AXES, attach_epilogue, cooperative_fetch, dtype_bytes, inline_all,
                      largest_divisor, read_index, shared_alloc_bytes, spatial_reduce_loops,
                      symbolic_batch_only)
from ..registry import DATA, WEIGHT, KernelInfo, Template, register
from .lanes import MAX_BOOL_LANES, bool_lanes_vary, lanes_contiguous

log = logging.getLogger(__name__)

# per tiled dim (outermost..innermost in memory): the most threads and outputs per thread
# a config may give it. threadIdx.z is limited to 64 by CUDA.
MAX_THREADS = (32, 32, 128)
MAX_INNER = (4, 4, 8)  # 8: a 16-byte vector of fp16 channels (NHWC), the "rows" stage's
# fallback: threads per block aimed at, outputs per thread along the row dim
FALLBACK_BLOCK = 256
FALLBACK_X_THREADS = {"NCHW": 32, "NHWC": 64}
STAGES = ("shared", "global", "rows")
MAX_BLOCK_THREADS = 1024
VECTOR_BYTES = 16  # one ld.global.v4: a thread's channels in the "rows" stage


def _geometry(info: KernelInfo) -> Conv2dGeometry:
    """The anchor's geometry: layout, window, strides, channel multiplier (`multiplier`) and
    the positions of the channel, OH, OW dims among the tiled ones (`tiled_axes`)."""
    return info.geometry


def threads_per_block(cfg: Config) -> int:
    return cfg["tile_0"][1] * cfg["tile_1"][1] * cfg["tile_2"][1]


def shared_bytes(info: KernelInfo, cfg: Config) -> int:
    """Shared memory the input tile (halo included) of one block takes with stage=shared."""
    g = _geometry(info)
    tile = [cfg[f"tile_{k}"][1] * cfg[f"tile_{k}"][2] for k in range(3)]
    c_t, h_t, w_t = (tile[d] for d in g.tiled_axes)
    c_in = -(-c_t // g.multiplier) + (1 if c_t % g.multiplier else 0)
    h_in = (h_t - 1) * g.stride[0] + (g.kh - 1) * g.dilation[0] + 1
    w_in = (w_t - 1) * g.stride[1] + (g.kw - 1) * g.dilation[1] + 1
    return c_in * h_in * w_in * dtype_bytes(info.dtype)


def fallback_values(info: KernelInfo, *, block: int = FALLBACK_BLOCK, vec: int | None = None,
                    reuse: int = 2, x_cap: int | None = None) -> dict:
    """The fallback's knob values.

    threadIdx.x runs along the innermost memory dim (OW for NCHW, channels for NHWC), `vec`
    consecutive outputs per thread there (2 for float16: 4-byte accesses); along the dim
    next to it (OH for NCHW, OW for NHWC) `reuse` outputs per thread at stride 1, so the
    windows of a thread share loaded rows (columns); the other dims fill a block of about
    `block` threads. The input comes straight from global memory (L1 serves the window
    reuse: no halo copy, no __syncthreads), which measured faster than shared staging on
    H100 for MobileNet-V2's layers.
    """
    g = _geometry(info)
    dims = info.out_shape[1:]
    threads, inner = [1, 1, 1], [1, 1, 1]
    if vec is None:
        vec = 2 if dtype_bytes(info.dtype) == 2 else 1
    if dims[2] % vec or (g.layout == "NCHW" and g.stride[1] != 1):
        vec = 1
    inner[2] = min(vec, MAX_INNER[2])
    cap = x_cap or FALLBACK_X_THREADS[g.layout]
    threads[2] = largest_divisor(dims[2] // inner[2], cap)
    stride = g.stride[0] if g.layout == "NCHW" else g.stride[1]
    if reuse > 1 and stride == 1 and dims[1] % reuse == 0 and dims[1] >= 4 * reuse:
        inner[1] = min(reuse, MAX_INNER[1])
    budget = max(1, block // threads[2])
    threads[1] = largest_divisor(dims[1] // inner[1], min(budget, MAX_THREADS[1]))
    budget = max(1, budget // threads[1])
    threads[0] = largest_divisor(dims[0], min(budget, MAX_THREADS[0]))
    if threads[0] * threads[1] * threads[2] < block // 2:
        # small spatial dims (7x7 NHWC): widen the row instead
        cap = min(MAX_THREADS[2], block // (threads[0] * threads[1]))
        threads[2] = max(threads[2], largest_divisor(dims[2] // inner[2], cap))
    vals = {f"tile_{k}": (dims[k] // (threads[k] * inner[k]), threads[k], inner[k]) for k in range(3)}
    vals["stage"] = "global"
    vals["unroll_window"] = 1
    return vals


def rows_supported(info: KernelInfo, cfg: Config) -> None:
    """Stage "rows" needs NHWC, a channel multiplier of 1 and a whole 16-byte vector of
    channels a thread (ValueError otherwise: the space's filter and the build agree)."""
    g = _geometry(info)
    lanes = VECTOR_BYTES // dtype_bytes(info.dtype)
    c_inner = cfg[f"tile_{g.tiled_axes[0]}"][2]
    if g.layout != "NHWC" or g.multiplier != 1 or c_inner != lanes:
        raise ValueError(f"stage 'rows' wants NHWC, channel multiplier 1 and {lanes} channels a thread "
                         f"({g.layout}, multiplier {g.multiplier}, {c_inner} channels)")


def rows_fallback_values(info: KernelInfo, sm_count: int, block: int = FALLBACK_BLOCK,
                         ow_inner: int = 4) -> dict | None:
    """The "rows" stage's fallback for an NHWC conv of channel multiplier 1 whose channels are
    whole 16-byte vectors (None otherwise): a vector of channels and up to `ow_inner` outputs
    along OW a thread, threads along channels, then OW, then OH, up to about `block`; fewer
    channel threads where that leaves an SM without a block (a 7x7 map at batch 1)."""
    g = _geometry(info)
    lanes = VECTOR_BYTES // dtype_bytes(info.dtype)
    oh, ow, c = info.out_shape[1:]
    if g.layout != "NHWC" or g.multiplier != 1 or c % lanes:
        return None
    t_inner = largest_divisor(ow, min(ow_inner, MAX_INNER[1]))
    vectors = info.out_shape[0] * oh * (ow // t_inner) * (c // lanes)
    tc = largest_divisor(c // lanes, min(MAX_THREADS[2], max(1, vectors // sm_count)))
    tw = largest_divisor(ow // t_inner, min(MAX_THREADS[1], max(1, block // tc)))
    th = largest_divisor(oh, min(MAX_THREADS[0], max(1, block // (tc * tw))))
    return {"tile_0": (oh // th, th, 1), "tile_1": (ow // (tw * t_inner), tw, t_inner),
            "tile_2": (c // (tc * lanes), tc, lanes), "stage": "rows", "unroll_window": 1}


@register("gpu", "depthwise_conv2d")
class Conv2dDepthwise(Template):
    name = "conv2d_depthwise"
    horizontal = True  # plain grids: may share a launch (codegen/horizontal.py)

    def takes_symbolic(self, info: KernelInfo) -> bool:
        """A symbolic batch: the blocks run over it, the tiles split the fixed axes."""
        return symbolic_batch_only(info)

    def space(self, info: KernelInfo, target) -> ConfigSpace:
        s = ConfigSpace()
        for k, extent in enumerate(info.out_shape[1:]):
            s.define_split(f"tile_{k}", extent, 3,
                           filter=lambda c, k=k: c[1] <= MAX_THREADS[k] and c[2] <= MAX_INNER[k])
        s.define_knob("stage", list(STAGES))
        s.define_knob("unroll_window", [1, 0])
        g = _geometry(info)
        lanes = VECTOR_BYTES // dtype_bytes(info.dtype)
        c_tile = f"tile_{g.tiled_axes[0]}"
        rows_ok = g.layout == "NHWC" and g.multiplier == 1
        s.constrain(lambda v: v["stage"] != "rows" or (rows_ok and v[c_tile][2] == lanes))
        s.constrain(lambda v: v["tile_0"][1] * v["tile_1"][1] * v["tile_2"][1] <= MAX_BLOCK_THREADS)
        return s

    def fallback(self, info: KernelInfo, target, space: ConfigSpace) -> Config:
        rows = rows_fallback_values(info, device_caps(target).sm_count)
        return space.from_values(rows or fallback_values(info))

    def apply(self, sch: s_tir.Schedule, info: KernelInfo, cfg: Config, target) -> None:
        nthreads = threads_per_block(cfg)
        lim = device_caps(target)
        max_threads = lim.max_threads_per_block
        if nthreads > max_threads:
            raise ValueError(f"{nthreads} threads per block > {max_threads}")
        shared = cfg["stage"] == "shared" and bool(info.staged(DATA))
        rows = cfg["stage"] == "rows"
        if rows:
            rows_supported(info, cfg)
        if shared:
            need, limit = shared_bytes(info, cfg), lim.max_shared_memory_per_block
            if need > limit:
                raise ValueError(f"input tile needs {need} bytes of shared memory > {limit}")

        anchor = info.anchor_block
        conv = sch.get_sblock(anchor)
        keep = info.staged(DATA, WEIGHT) if shared or rows else info.staged(WEIGHT)
        inline_all(sch, info, keep=keep)

        sp, rd = spatial_reduce_loops(sch, conv)
        n, dims = sp[0], sp[1:]
        tiles = [sch.split(l, factors=list(cfg[f"tile_{k}"])) for k, l in enumerate(dims)]
        rc_pos = _geometry(info).rc_axis
        rc = rd[rc_pos]
        window = [l for k, l in enumerate(rd) if k != rc_pos]
        sch.reorder(n, *[t[0] for t in tiles], *[t[1] for t in tiles], rc, *window,
                    *[t[2] for t in tiles])
        sch.bind(sch.fuse(n, *[t[0] for t in tiles]), "blockIdx.x")
        for t, axis in zip(tiles, THREAD_AXES):
            sch.bind(t[1], axis)
        tx = tiles[2][1]
        attach_epilogue(sch, info, anchor, tx, "local")
        # the epilogue blocks (and the anchor's write-back when it is an output) now under tx
        epilogue = [sch.get(b).name_hint for b in sch.get_child_blocks(tx)]
        epilogue = [b for b in epilogue if b != anchor]
        depth = 4  # blockIdx.x + three thread loops

        # weights of the thread's channels -> registers, once per thread (a window row at a
        # time with stage "rows": the whole window of 8 channels would not fit)
        wcache = sch.cache_read(conv, read_index(sch, conv, info.operands[WEIGHT]), "local")
        at = window[0] if rows else tx
        sch.compute_at(wcache, at)
        for stage in info.staged(WEIGHT):  # a weight prologue, computed on the way in
            sch.compute_inline(sch.get_sblock(stage))
        wloops = sch.get_loops(wcache)[depth + (2 if rows else 0):]
        for l in wloops[:-1] if rows else wloops:
            sch.unroll(l)
        if rows:  # the thread's channels of a weight column: one 16-byte load
            sch.vectorize(wloops[-1])

        if rows:
            # the row's input columns of the thread's channels -> registers, 16-byte vectors,
            # the padding (and a fused prologue) computed on the way in
            dcache = sch.cache_read(conv, read_index(sch, conv, info.operands[DATA]), "local")
            sch.compute_at(dcache, window[0])
            for stage in info.staged(DATA):
                sch.compute_inline(sch.get_sblock(stage))
            loops = sch.get_loops(dcache)[depth + 2:]  # below rc and the window's row loop
            vec = loops[-1]
            width = sch.get(vec).extent.value
            # a gathered column (a transposing prologue reads NCHW channels a plane apart) stays
            # scalar: TVM's CUDA codegen prints a vector of strided loads as code nvcc refuses
            gathered = not lanes_contiguous(sch, dcache, vec, width)
            if not gathered and width > MAX_BOOL_LANES and bool_lanes_vary(sch, dcache, vec, width):
                # a prologue's select (a ReLU) over 8 halves would be a bool vector CUDA
                # cannot print: two vectors of 4 a column instead
                loops[-1:] = sch.split(vec, [None, MAX_BOOL_LANES])
            for l in loops[:-1]:
                sch.unroll(l)
            (sch.unroll if gathered else sch.vectorize)(loops[-1])

        if shared:
            # the block's input tile, halo included, padding/prologue computed on the way in
            dcache = sch.cache_read(conv, read_index(sch, conv, info.operands[DATA]), "shared")
            sch.compute_at(dcache, tx)
            sch.compute_inline(sch.get_sblock(info.stage(DATA)))
            cooperative_fetch(sch, dcache, depth, [cfg[f"tile_{k}"][1] for k in range(3)])

        if cfg["unroll_window"]:
            for l in window:
                sch.unroll(l)
        for t in tiles:
            sch.unroll(t[2])
        sch.decompose_reduction(conv, rc)
        for name in epilogue:
            for l in sch.get_loops(sch.get_sblock(name))[depth:]:
                sch.unroll(l)
        if shared:
            # shared_bytes is exact only when the channel multiplier divides the channel tile;
            # otherwise TVM's region for the tile can span every input channel
            need = shared_alloc_bytes(sch.mod)
            if need > limit:
                raise ValueError(f"input tile needs {need} bytes of shared memory > {limit} as staged "
                                 f"(channel multiplier {_geometry(info).multiplier})")
        log.debug("%s: %s, %d threads/block", self.name, cfg.values, nthreads)

