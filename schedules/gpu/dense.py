"""CUDA dense / matmul template: the AutoTVM tiled GEMM, in s_tir.

Output rows (M) and columns (N) are each split four ways (block, virtual thread, thread,
per-thread); the reduction K three ways (outer, inner, threads). At each outer K step all
threads of a block stage the data and weight tiles in shared memory together (an injective
prologue such as a flatten or a scale is computed on the way in), accumulate in registers,
and the epilogue (bias, activation, cast) runs from those registers.

With K threads (tile_k's last factor > 1) each thread sums a strided slice of every K step
and the partial sums meet in one cross-thread (warp-shuffle) reduction per output: how
batch-1 GEMV gets enough threads, since M*N outputs alone (1000 for ResNet-50's FC) would
leave most of the GPU idle. Batch dims of a matmul go to the block index.

Knob caps depend on the shape so that every point of the space is a valid kernel: at most
the target's threads per block and tiles that fit its shared memory (DeviceCaps). The GEMM
shape is the anchor's GemmGeometry; the staged operands are found by role (data, weight).
"""
from __future__ import annotations

import logging
import math

from tvm import s_tir

from ...ops.dense import GemmGeometry
from ...target import DeviceCaps, device_caps
from ..space import Config, ConfigSpace

from ..common import (annotate_unroll, attach_epilogue, cooperative_fetch, dtype_bytes, inline_all,
                      largest_divisor, loop_depth, read_index, symbolic_rows_only)
from ..registry import DATA, WEIGHT, KernelInfo, Template, register
from .generic import CudaGenericReduction

log = logging.getLogger(__name__)

MAX_VTHREAD = 4
MAX_INNER = 8
# K threads: at most one warp (DeviceCaps.warp_size), so the cross-thread reduction is warp shuffles only
MAX_K_INNER = 32
SMALL_M = 16  # fewer rows than this: GEMV-like caps and fallback
DEFAULT_SMEM = 48 * 1024  # tiles are sized for at most this much shared memory (CUDA's static limit)
# fallback: GEMM tilings (threads M, per-thread M, threads N, per-thread N), biggest first,
# the first with MIN_BLOCKS blocks (about two per SM of an H100: measured there, kept as is) wins,
# K steps of GEMM_K_STEP; GEMV K steps of about
# GEMV_K_STEP elements. From H100 measurements of fallback vs. a grid of configs: K steps
# of 16 beat 8 by ~30% (64x4096x4096, 128x768x3072), 32x32 tiles of 128 threads beat 64x64
# and 4x4 outputs per thread; GEMV is within 10% of the best of the grid.
GEMM_TILINGS = [(8, 4, 16, 2), (8, 2, 16, 2), (8, 2, 8, 2), (8, 1, 8, 1)]
MIN_BLOCKS = 256
GEMM_K_STEP = 16
GEMV_K_STEP = 256


PAD_QUANTUM = 8  # an awkward M, N or K is tiled as if rounded up to a multiple of this


def padded(extent: int) -> int:
    """The extent the tiles cover: `extent` itself when it has a divisor of PAD_QUANTUM or more
    (up to 32), else rounded up to a multiple of PAD_QUANTUM. Why: ViT's 197 tokens (a prime)
    left only 1-row, 1-column tiles; the padded tail is masked by a predicate instead."""
    if extent < SMALL_M or largest_divisor(extent, 32) >= PAD_QUANTUM:
        return extent
    return -(-extent // PAD_QUANTUM) * PAD_QUANTUM


def aliases_padding(info: KernelInfo, cfg: Config) -> bool:
    """Whether a config's padded tail could write over other outputs: tiles that do not divide
    M (N) cover padding rows (columns) the GEMM masks, and an epilogue whose reshapes merge that
    axis with a more significant one (Swin's window reverse; KernelInfo.padding_spills) maps a
    padding row onto a real row of the next entry, written from an accumulator never computed."""
    dims = gemm_dims(info)
    if dims is None:
        return False
    _, m, n, _ = dims
    rows_spill, cols_spill = info.padding_spills
    return (rows_spill and m % math.prod(cfg["tile_m"][1:]) != 0) or \
        (cols_spill and n % math.prod(cfg["tile_n"][1:]) != 0)


def _bank_elems(itemsize: int) -> int:
    return max(1, 4 // itemsize)


def _reduce_buffer_bytes(threads: int, tk: int, itemsize: int) -> int:
    """Shared memory of the K threads' allreduce: TVM reduces a K-thread count that is no
    power of two through a buffer of one accumulator (float32 or wider) per thread of the block."""
    if tk & (tk - 1) == 0:
        return 0
    return threads * max(4, itemsize)


def gemm_dims(info: KernelInfo):
    """(batch, M, N, K) of a dense (x[M,K], w[N,K]) or matmul (a[...,M,K], b[...,K,N]) anchor,
    from its GemmGeometry; None when the group is no single GEMM block."""
    if info.anchor_block is None or len(info.reduce_blocks) != 1 or not isinstance(info.geometry, GemmGeometry):
        return None
    return info.geometry.dims


class _Caps:
    """Per-knob bounds for one shape: threads over M, N, K and tile sizes, chosen so that
    any combination of knob values stays within the thread and shared-memory limits.

    Few rows (GEMV-like, M < 16): narrow column tiles and a warp of K threads, so that
    long K tiles fit shared memory and the weight streams through many blocks at once.
    """

    def __init__(self, m: int, n: int, k: int, itemsize: int, smem: int, lim: DeviceCaps = DeviceCaps()):
        self.small = m < SMALL_M
        self.tm = largest_divisor(m, 16 if self.small else 32)
        self.tn = 8 if self.small else 32
        self.tk = max(1, min(lim.warp_size, lim.max_threads_per_block // (self.tm * self.tn)))
        self.vi_m = MAX_INNER
        self.vi_n = 2 if self.small else MAX_INNER
        rows = largest_divisor(m, self.tm * self.vi_m)
        cols = largest_divisor(n, self.tn * self.vi_n)
        # tiles [rows|cols, kt] (a matmul weight: [kt, cols]) plus apply's row padding
        pad = 2 * _bank_elems(itemsize)
        # room for the K threads' reduction buffer where a K-thread count may need one
        smem -= max(_reduce_buffer_bytes(self.tm * self.tn * self.tk, d, itemsize)
                    for d in range(1, self.tk + 1) if k % d == 0)
        self.kt = max(1, (smem // itemsize - (rows + cols) * pad) // (rows + cols + pad))

    def m_ok(self, c) -> bool:
        return c[1] <= MAX_VTHREAD and c[2] <= self.tm and c[3] <= MAX_INNER and c[1] * c[3] <= self.vi_m

    def n_ok(self, c) -> bool:
        return c[1] <= MAX_VTHREAD and c[2] <= self.tn and c[3] <= MAX_INNER and c[1] * c[3] <= self.vi_n

    def k_ok(self, c) -> bool:
        return c[1] <= MAX_K_INNER and c[2] <= self.tk and c[1] * c[2] <= self.kt


def tiled_dims(info: KernelInfo):
    """(batch, M, N, K) as the tiles see them: each of M, N, K `padded`."""
    dims = gemm_dims(info)
    if dims is None:
        return None
    batch, m, n, k = dims
    return batch, padded(m), padded(n), padded(k)


def _caps(info: KernelInfo, target, dims) -> _Caps:
    _, m, n, k = dims
    lim = device_caps(target)
    return _Caps(m, n, k, dtype_bytes(info.dtype), min(lim.max_shared_memory_per_block, DEFAULT_SMEM), lim)


def threads_per_block(cfg: Config) -> int:
    return cfg["tile_m"][2] * cfg["tile_n"][2] * cfg["tile_k"][2]


def shared_bytes(cfg: Config, itemsize: int) -> int:
    """Upper bound of the shared memory of a block: tiles (row padding included) and the
    K-thread reduction buffer."""
    rows = math.prod(cfg["tile_m"][1:])
    cols = math.prod(cfg["tile_n"][1:])
    kt = cfg["tile_k"][1] * cfg["tile_k"][2]
    pad = 2 * _bank_elems(itemsize)
    red = _reduce_buffer_bytes(threads_per_block(cfg), cfg["tile_k"][2], itemsize)
    return ((rows + cols) * kt + (rows + cols + kt) * pad) * itemsize + red


def _gemm_tiles(batch: int, m: int, n: int) -> tuple[int, int, int, int]:
    """(tm, im, tn, in) of the GEMM fallback: the biggest of a few classic tilings that still
    gives about two blocks per SM."""
    best = None
    for want in GEMM_TILINGS:
        tm = largest_divisor(m, want[0])
        im = largest_divisor(m // tm, want[1])
        tn = largest_divisor(n, want[2])
        inn = largest_divisor(n // tn, want[3])
        blocks = batch * (m // (tm * im)) * (n // (tn * inn))
        best = (tm, im, tn, inn)
        if blocks >= MIN_BLOCKS:
            break
    return best


def _closest(space: ConfigSpace, name: str, want):
    """`want` if the knob has it, else the candidate nearest to it (log distance per factor)."""
    cands = next(k.candidates for k in space.knobs if k.name == name)
    if want in cands:
        return want
    return min(cands, key=lambda c: sum(abs(math.log(x) - math.log(y)) for x, y in zip(c, want)))


# (virtual threads, threads, rows a thread) over M of a GEMM with symbolic rows: one row a block
ROW_A_BLOCK = (1, 1, 1)


@register("gpu", "dense")
class CudaDense(Template):
    name = "cuda_dense"
    horizontal = True  # plain grids: may share a launch (codegen/horizontal.py)

    def __init__(self):
        self._generic = CudaGenericReduction()  # for anchors that are no plain GEMM

    def takes_symbolic(self, info: KernelInfo) -> bool:
        """Symbolic rows (a batch, N*S): a block a row (`ROW_A_BLOCK`), the rows on the grid, so
        no tile follows their predicated tail. Not a symbolic N or K, which the tiles split."""
        return tiled_dims(info) is not None and symbolic_rows_only(info)

    def space(self, info: KernelInfo, target) -> ConfigSpace:
        dims = tiled_dims(info)
        if dims is None:
            return self._generic.space(info, target)
        _, m, n, k = dims
        caps = _caps(info, target, dims)
        s = ConfigSpace()
        s.define_split("tile_m", m, 4, filter=caps.m_ok)
        if info.symbolic:
            s.constrain(lambda v: tuple(v["tile_m"][1:]) == ROW_A_BLOCK)
        s.define_split("tile_n", n, 4, filter=caps.n_ok)
        s.define_split("tile_k", k, 3, filter=caps.k_ok)  # (outer, inner, threads)
        s.define_knob("unroll", [0, 512, 1500])
        s.define_knob("unroll_explicit", [1, 0])
        return s

    def fallback(self, info: KernelInfo, target, space: ConfigSpace) -> Config:
        dims = tiled_dims(info)
        if dims is None:
            return self._generic.fallback(info, target, space)
        batch, m, n, k = dims
        caps = _caps(info, target, dims)
        if not caps.small:
            tm, im, tn, inn = _gemm_tiles(batch, m, n)
            tk, kk = 1, largest_divisor(k, GEMM_K_STEP)
        else:
            # a warp of K threads per output row, few outputs per block (many blocks), and
            # every row of the batch in one thread: each weight element is read once
            im = largest_divisor(m, MAX_INNER)
            tm = largest_divisor(m // im, caps.tm)
            tk = largest_divisor(k, caps.tk)
            tn = largest_divisor(n, max(1, min(caps.tn, 256 // (tk * tm))))
            inn = 1
            kk = largest_divisor(k // tk, max(1, min(GEMV_K_STEP, caps.kt) // tk))
        if info.symbolic:  # a block a row (takes_symbolic)
            tm, im = 1, 1
        vals = {
            "tile_m": (m // (tm * im), 1, tm, im),
            "tile_n": (n // (tn * inn), 1, tn, inn),
            "tile_k": (k // (kk * tk), kk, tk),
            "unroll": 512,
            "unroll_explicit": 1,
        }
        vals = {name: (_closest(space, name, v) if name.startswith("tile_") else v) for name, v in vals.items()}
        log.debug("dense fallback for batch %d, %dx%dx%d: %s", batch, m, n, k, vals)
        return space.from_values(vals)

    def apply(self, sch: s_tir.Schedule, info: KernelInfo, cfg: Config, target) -> None:
        if gemm_dims(info) is None:
            self._generic.apply(sch, info, cfg, target)
            return
        if aliases_padding(info, cfg):
            raise ValueError("tiles pad M or N under an epilogue that reshapes the output: padding rows "
                             "would be written over another batch entry's")
        anchor = info.anchor_block
        block = sch.get_sblock(anchor)
        roles = [r for r in (DATA, WEIGHT) if r in info.operands]
        read_bufs = list(dict.fromkeys(info.operands[r] for r in roles))
        stage_of = {info.operands[r]: info.stage(r) for r in roles}  # buffer -> its prologue block
        staged = info.staged(*roles)
        inline_all(sch, info, keep=staged)
        for name in info.output_blocks:
            out = sch.get_sblock(name)
            if not sch.get_loops(out):  # 0-d output (1-D @ 1-D): rfactor and reverse_compute_at need a loop
                sch.add_unit_loop(out)

        loops = sch.get_loops(block)
        iters = sch.get(block).iter_vars
        if [iv.iter_type for iv in iters][-1:] != [2] or sum(iv.iter_type != 0 for iv in iters) != 1:
            raise ValueError(f"{anchor}: expected spatial loops then one reduction loop")
        *batch, mloop, nloop, kloop = loops
        # outermost factors None: TVM takes the ceiling and masks the tail, so a padded
        # extent (see `padded`) needs nothing else
        ko_n, kk_n, tk_n = cfg["tile_k"]
        ko, kk, kt = sch.split(kloop, factors=[None, kk_n, tk_n])
        compute = block
        if tk_n > 1:
            compute = sch.rfactor(kt, 0)  # partial sums per K thread; `block` now sums them
            *batch, mloop, nloop, ko, kk, kt = sch.get_loops(compute)
        (m0, m1, m2, m3), (n0, n1, n2, n3) = cfg["tile_m"], cfg["tile_n"]
        if tk_n > 1:
            # no virtual threads around a cross-thread reduction (TVM cannot lower that):
            # the "virtual thread" factor becomes more contiguous outputs per thread
            bm, tm, vm, im = sch.split(mloop, factors=[None, m2, m1, m3])
            bn, tn, vn, inn = sch.split(nloop, factors=[None, n2, n1, n3])
            sch.reorder(*batch, bm, bn, tm, tn, kt, ko, kk, vm, im, vn, inn)
        else:
            bm, vm, tm, im = sch.split(mloop, factors=[None, m1, m2, m3])
            bn, vn, tn, inn = sch.split(nloop, factors=[None, n1, n2, n3])
            sch.reorder(*batch, bm, bn, vm, vn, tm, tn, kt, ko, kk, im, inn)
            sch.bind(vm, "vthread.y")
            sch.bind(vn, "vthread.x")
        sch.bind(sch.fuse(*batch, bm, bn), "blockIdx.x")
        threads = [cfg["tile_m"][2], cfg["tile_n"][2]]
        axes = ["threadIdx.y", "threadIdx.x"]
        if tk_n > 1:
            threads.append(tk_n)
            axes = ["threadIdx.z", "threadIdx.y", "threadIdx.x"]
        for loop, axis in zip((tm, tn, kt), axes):
            sch.bind(loop, axis)

        if tk_n > 1:
            sch.set_scope(compute, 0, "local")
            sch.reverse_compute_at(block, tn)
            # its loops under tn: K threads first (the rfactor'd iter var leads), then the
            # thread's rows and columns where more than one; the K threads go innermost
            red, *rest = sch.get_loops(block)[loop_depth(sch, block, tn):]
            assert int(sch.get(red).extent) == tk_n, "unexpected loop order of the K-thread reduction"
            if rest:
                sch.reorder(*rest, red)
            sch.bind(red, "threadIdx.x")
        attach_epilogue(sch, info, anchor, tn, "local")

        depth = loop_depth(sch, compute, ko)
        for buf in read_bufs:
            cache = sch.cache_read(compute, read_index(sch, compute, buf), "shared")
            sch.compute_at(cache, ko)
            if stage_of[buf] in staged:  # a prologue, computed on the way into shared memory
                sch.compute_inline(sch.get_sblock(stage_of[buf]))
            ndim = len(sch.get(cache).writes[0].region)
            if ndim >= 2:
                # row pitch an odd number of 4-byte banks: threads reading one column of
                # several rows hit distinct banks
                e = _bank_elems(dtype_bytes(info.dtype))
                sch.storage_align(cache, 0, ndim - 2, 2 * e, e)
            cooperative_fetch(sch, cache, depth, threads, axes)
        annotate_unroll(sch, ko, cfg["unroll"], cfg["unroll_explicit"])
