"""CUDA implicit-GEMM conv2d template (NCHW and NHWC, groups == 1).

The conv is tiled as a GEMM: M = N*OH*OW output pixels, N = K output channels, and the
reduction R = C*KH*KW. In s_tir terms:

* `transform_block_layout` turns the conv block's iterators (n, y, x, k, ry, rx, rc) into
  (m, k, r), and the epilogue blocks' (n, y, x, k) into (m, k), so all of them iterate the
  same 2-D output space; the conv result buffer becomes [M, K] (registers after scheduling).
* `reindex` of the conv's two reads gives the im2col matrix A[m, r] (read from pad_temp,
  into which the padding/prologue stage is inlined) and the weight matrix B[k, r]; both
  become shared-memory tiles computed at the outer reduction loop by all threads together.
* M and K are split block / virtual thread / thread / per-thread, R outer / inner; the
  accumulator lives in registers and the epilogue is computed from them (`attach_epilogue`).

Thread layout follows the output's contiguous dim: threadIdx.x runs along m (output x) for
NCHW and along k (channels) for NHWC, so epilogue stores coalesce. Each shared tile is laid
out so that the compute reads of a warp are conflict-light: the operand on threadIdx.x is
stored [R, Q], the other one [P, R]; tile fills run in the global operand's contiguous order.

The GEMM view (m, k, r) is the anchor's Conv2dGeometry; the padded input and a weight prologue
are found by role (data, weight); the fallback aims at two blocks per SM and the r-tile cap
at the target's shared memory (DeviceCaps).
"""
from __future__ import annotations

import dataclasses
import itertools
import logging
import math

from tvm import s_tir

from ...options import DEFAULT, BuildOptions
from ...ops.conv2d import Conv2dGeometry
from ...target import DeviceCaps, device_caps
from ..space import Config, ConfigSpace, divisors

from ..common import annotate_unroll, attach_epilogue, dtype_bytes, inline_all, to_implicit_gemm
from ..registry import DATA, WEIGHT, KernelInfo, Template, register

log = logging.getLogger(__name__)

# split filters: (block, vthread, thread, inner); threads per dim <= 32 keeps a block at
# <= 1024 threads, vthread * inner <= 8 keeps the accumulator at <= 64 registers a thread
MAX_VTHREAD = 4
MAX_THREAD = 32
MAX_INNER = 8
MAX_PER_THREAD = 8
MAX_BLOCK_TILE = 256
# fallback aims
FALLBACK_THREADS = 256
FALLBACK_PER_THREAD = 16  # 4x4 register tile
BLOCKS_PER_SM = 2  # fallback_tiles aims at this many blocks for each SM of the target
NARROW_PENALTY = 0.9
FALLBACK_RED_BYTES = 64  # r-tile of 16 float32 / 32 float16 values
UNROLL = (0, 512, 1500)


def gemm_shape(info: KernelInfo) -> Conv2dGeometry:
    """The anchor's geometry, whose GEMM view (m = N*OH*OW, k channels, r = C*KH*KW) this
    template tiles; groups == 1 only."""
    g = info.geometry
    if g.groups != 1:
        raise ValueError(f"conv2d_implicit_gemm handles groups == 1 only, got groups={g.groups} "
                         "(grouped convs use conv2d_direct)")
    return g


def shared_row_bytes(lim: DeviceCaps) -> int:
    """Most bytes of one r-tile row: the A and B tiles (MAX_BLOCK_TILE rows each) fit the
    target's shared memory (96 B for 48 KiB)."""
    return lim.max_shared_memory_per_block // (2 * MAX_BLOCK_TILE)


def _split_filter(c) -> bool:
    return (c[1] <= MAX_VTHREAD and c[2] <= MAX_THREAD and c[3] <= MAX_INNER
            and c[1] * c[3] <= MAX_PER_THREAD and c[1] * c[2] * c[3] <= MAX_BLOCK_TILE)


# per-thread extent along one dim -> (virtual threads, inner): 4 outputs a thread are two
# interleaved pairs, which keeps a warp's shared-memory reads apart (measured ~15% faster
# than 4 adjacent outputs on an H100)
PER_THREAD = {1: (1, 1), 2: (1, 2), 4: (2, 2)}


def fallback_tiles(g: Conv2dGeometry, narrow_penalty: float = None, blocks_wanted: int = None
                   ) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """((vthreads, threads, inner) along M, the same along K) for the fallback config.

    Perfect divisors only. A big GEMM gets 256 threads with a 4x4 register tile each (a 64x64
    block tile, as two interleaved 2x2s); a small one trades the register tile for blocks, as
    long reductions over few output pixels (ResNet's 14x14 and 7x7 layers at batch 1) need
    many blocks to keep the SMs busy. Score: share of `blocks_wanted` (default: BLOCKS_PER_SM
    for each of the default DeviceCaps' SMs) reached, times
    (outputs a thread / 16)^0.3, over 1 + |log2(threads / 256)|, times `narrow_penalty` when
    fewer than 16 threads run along the output's contiguous dim (threadIdx.x); weights
    fitted to H100 sweeps of ResNet-50's convs.
    """
    penalty = NARROW_PENALTY if narrow_penalty is None else narrow_penalty
    want = BLOCKS_PER_SM * DeviceCaps().sm_count if blocks_wanted is None else blocks_wanted
    best, best_score = None, None
    for lo in (64, 32, 1):
        for mt in (d for d in divisors(g.m) if d <= MAX_THREAD):
            for kt in (d for d in divisors(g.k) if d <= MAX_THREAD):
                threads = mt * kt
                if not lo <= threads <= 512:
                    continue
                along_x = mt if g.layout == "NCHW" else kt
                for em, ek in itertools.product(PER_THREAD, PER_THREAD):
                    if g.m % (mt * em) or g.k % (kt * ek):
                        continue
                    blocks = (g.m // (mt * em)) * (g.k // (kt * ek))
                    fill = min(1.0, blocks / want)
                    regs = (em * ek / FALLBACK_PER_THREAD) ** 0.3
                    score = fill * regs / (1 + abs(math.log2(threads / FALLBACK_THREADS)))
                    if along_x < 16:
                        score *= penalty
                    score = (score, -abs(mt * em - kt * ek))  # then square-ish block tiles
                    if best_score is None or score > best_score:
                        vm, im = PER_THREAD[em]
                        vk, ik = PER_THREAD[ek]
                        best, best_score = ((vm, mt, im), (vk, kt, ik)), score
        if best is not None:
            return best
    raise ValueError(f"no fallback tiling for {g}")


@register("gpu", "conv2d")
class Conv2dImplicitGemm(Template):
    name = "conv2d_implicit_gemm"
    horizontal = True  # plain grids: may share a launch (codegen/horizontal.py)

    def preference(self, info: KernelInfo, target, options: BuildOptions = DEFAULT) -> int:
        """Untuned, implicit GEMM beat the direct template on the H100 for every ResNet conv
        measured (1.3-4x at batch 16, 1.4x at 1x128x28x28 and 1x512x7x7) except the
        batch-1, 64-channel one (0.031 vs 0.024 ms at 1x64x56x56)."""
        g = gemm_shape(info)
        return 0 if g.n == 1 and g.k <= 64 else 1

    def accepts(self, info: KernelInfo) -> bool:
        """One group, no split-K, and an epilogue that writes the conv's own shape: its blocks
        are re-indexed by the GEMM's [M, K] map (an epilogue transpose, such as an SE gate's
        NHWC -> NCHW at 1x1 pixels, goes to another template)."""
        return (info.geometry.groups == 1 and info.geometry.split_k == 1
                and all(tuple(s) == tuple(info.out_shape) for s in info.output_shapes))

    def space(self, info: KernelInfo, target) -> ConfigSpace:
        g = gemm_shape(info)
        s = ConfigSpace()
        s.define_split("tile_m", g.m, 4, filter=_split_filter)
        s.define_split("tile_n", g.k, 4, filter=_split_filter)
        max_ri = shared_row_bytes(device_caps(target)) // dtype_bytes(info.dtype)
        s.define_split("tile_k", g.r, 2, filter=lambda c: c[1] <= max_ri)
        s.define_knob("unroll", list(UNROLL))
        return s

    def fallback(self, info: KernelInfo, target, space: ConfigSpace) -> Config:
        g = gemm_shape(info)
        (vm, mt, mi), (vk, kt, ki) = fallback_tiles(g, blocks_wanted=BLOCKS_PER_SM * device_caps(target).sm_count)
        ri = max(d for d in divisors(g.r) if d <= FALLBACK_RED_BYTES // dtype_bytes(info.dtype))
        return space.from_values({
            "tile_m": (g.m // (vm * mt * mi), vm, mt, mi),
            "tile_n": (g.k // (vk * kt * ki), vk, kt, ki),
            "tile_k": (g.r // ri, ri),
            "unroll": 512,
        })

    def apply(self, sch: s_tir.Schedule, info: KernelInfo, cfg: Config, target) -> None:
        g = gemm_shape(info)
        anchor = info.anchor_block
        inline_all(sch, info, keep=info.staged(DATA, WEIGHT))
        conv = sch.get_sblock(anchor)

        # the anchor's result: a 2-D [M, K] intermediate (a write-back copy when it is an output)
        if anchor in info.output_blocks:
            wb = sch.cache_write(conv, 0, "local")
            epilogue = [sch.get(wb).name_hint]
            info = dataclasses.replace(info, output_blocks=epilogue + [b for b in info.output_blocks
                                                                       if b != anchor])
        epilogue = [b for b in info.output_blocks if b != anchor]
        out_shape = tuple(info.out_shape)
        for name in epilogue:
            dom = tuple(int(iv.dom.extent) for iv in sch.get(sch.get_sblock(name)).iter_vars)
            if dom != out_shape:
                raise ValueError(f"conv2d_implicit_gemm: epilogue block {name} iterates {dom}, "
                                 f"not the conv output {out_shape}")
        # im2col (A[m, r]) and weight (B[k, r]) matrices, to be staged in shared memory
        a_fill, b_fill = to_implicit_gemm(sch, info, g, epilogue)
        q_is_m = g.layout == "NCHW"  # which GEMM dim runs along threadIdx.x
        transpose = lambda i, j: (j, i)  # noqa: E731
        # the operand indexed by the threadIdx.x dim is stored [R, Q]: lanes read consecutive words
        transposed = a_fill if q_is_m else b_fill
        sch.transform_layout(transposed, ("write", 0), transpose)
        sch.transform_block_layout(transposed, transpose)

        m, k, r = sch.get_loops(conv)
        ms = sch.split(m, factors=list(cfg["tile_m"]))
        ks = sch.split(k, factors=list(cfg["tile_n"]))
        ro, ri = sch.split(r, factors=list(cfg["tile_k"]))
        ps, qs = (ks, ms) if q_is_m else (ms, ks)
        sch.reorder(ms[0], ks[0], ps[1], qs[1], ps[2], qs[2], ro, ri, ps[3], qs[3])
        sch.bind(sch.fuse(ms[0], ks[0]), "blockIdx.x")  # neighbouring blocks share an A tile
        sch.bind(ps[1], "vthread.y")
        sch.bind(qs[1], "vthread.x")
        sch.bind(ps[2], "threadIdx.y")
        sch.bind(qs[2], "threadIdx.x")
        attach_epilogue(sch, info, anchor, qs[2], "local")

        threads = (cfg["tile_n" if q_is_m else "tile_m"][2], cfg["tile_m" if q_is_m else "tile_n"][2])
        for fill in (a_fill, b_fill):
            sch.set_scope(fill, 0, "shared")
            sch.compute_at(fill, ro, preserve_unit_loops=True)
            inner = sch.get_loops(fill)[-2:]
            fused = sch.fuse(*inner)
            _, ty, tx = sch.split(fused, factors=[None, *threads])
            sch.bind(ty, "threadIdx.y")
            sch.bind(tx, "threadIdx.x")
        annotate_unroll(sch, ro, cfg["unroll"])
