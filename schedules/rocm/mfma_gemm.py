"""The matrix-core (MFMA) GEMM schedule the ROCm conv and dense templates share, and their
common knob space, fallback and checks. Family "rocm" (CDNA: gfx908, gfx90a, gfx94x).

A template brings its anchor into GEMM form (`MfmaGemm.normalize`): one block computing
C[*s, m, n] += A[*s, m, r] * B[*s, r, n] from two fill blocks writing A and B (B R-major: the
MFMA B operand), the epilogue blocks reading C. `schedule` then tiles it for the intrinsics of
mfma.py (16x16x16 tiles; float16 or float32 in, float32 accumulators):

* a workgroup is `warps_m x warps_n` wavefronts of 64 lanes (threadIdx.y, threadIdx.x); each
  wavefront owns `frag_m x frag_n` 16x16 accumulator tiles, 4 float32 a lane (TVM's "warp"
  scope, lowered to registers);
* A and B tiles are filled into LDS by all lanes at each outer reduction step, `k_tiles`
  16-wide reduction steps a fill; each wavefront loads its 16x16 operand fragments from LDS;
* the accumulators go to an LDS tile of the workgroup's outputs, from which every lane computes
  the epilogue (bias, batch norm, activation, residual, cast) and writes the output once.

What differs from the CUDA templates: 64-lane wavefronts are the unit of work, fragment sizes
are fixed by the instruction, and tile sizes are capped by the target's LDS (64 KiB) and threads
per workgroup; the fallback aims at two workgroups per compute unit (DeviceCaps.sm_count is the
CU count of the arch).

Two TVM 0.27 issues are worked around: LowerWarpMemory lowers only the first "warp" buffer of a
kernel per run (the pipeline registered here runs it until none is left: schedules/warp_memory.py),
and TIR common subexpression elimination hides the lane index from it (turned off for these
kernels).

Not run on AMD hardware: the code objects are built and disassembled in CI (v_mfma present);
the tiling, padding and fragment layouts are checked on llvm (`schedule(..., on_gpu=False)`:
the same loops untensorized), the intrinsics' lane mapping against the ISA's, not the silicon.
So the preference is below the CUDA-family templates: untuned builds keep those (numerically
checked on CUDA) unless the build's options prefer them (`BuildOptions.prefer_mfma`, $TEFUSE_ROCM_MFMA=1 at the
CLI); tuning on an AMD GPU tries MFMA configs and checks
each against the reference, and a record naming one selects it.
"""
from __future__ import annotations

import dataclasses
import itertools

import tvm
from tvm import s_tir, tirx

from ...options import DEFAULT, BuildOptions
from ...target import MFMA_ARCHS, device_caps
from ..common import annotate_unroll, dtype_bytes, read_index
from ..registry import DOMINANT, TIR_PIPELINE, KernelInfo, Template
from ..space import Config, ConfigSpace
from ..warp_memory import LOWERS_ALL_WARP_BUFFERS, LowerAllWarpMemory
from . import mfma
from .mfma import LANES, TILE

MAX_WARPS = 8  # wavefronts a workgroup (512 lanes)
MAX_FRAGS = 16  # 16x16 accumulator tiles a wavefront (64 float32 registers a lane)
UNROLL = (0, 256)
BLOCKS_PER_CU = 2
PIPELINE = "tefuse_rocm_mfma"


def _pipeline_factory(**_):
    """TVM's default (s_tir) pipeline, with every fragment buffer (A, B, the accumulators) lowered."""
    from tvm.s_tir import pipeline as sp

    main, host, _device = sp.default_s_tir_pipeline()

    def device():
        return tvm.ir.transform.Sequential([LowerAllWarpMemory, tirx.transform.StmtSimplify(),
                                            tirx.transform.LowerIntrin()])

    return main, host, device


tvm.tirx.compilation_pipeline.register_tir_pipeline(PIPELINE, _pipeline_factory)
LOWERS_ALL_WARP_BUFFERS.add(PIPELINE)


def _tiles(n: int, cap: int) -> list[int]:
    return [d for d in range(1, cap + 1) if n % d == 0]


def lds_bytes(bm: int, bn: int, kt: int, itemsize: int) -> int:
    """LDS of one workgroup of bm x bn 16x16 tiles, kt 16-wide reduction steps a fill: the A and
    B tiles (`itemsize` bytes an element) and the float32 output tile."""
    return itemsize * (bm + bn) * TILE * kt * TILE + 4 * (bm * TILE) * (bn * TILE)


def padded_tiles(extent: int, quantum: int) -> int:
    """16-wide tiles covering `extent`, past `quantum` tiles rounded up to a multiple of it: M and N
    by 4 (a workgroup can then hold 2x2 wavefronts), K by 2. `pad_einsum` pads to them."""
    t = -(-extent // TILE)
    return t if t <= quantum else -(-t // quantum) * quantum


def inline_copies(sch: s_tir.Schedule, block, keep: list[str]) -> None:
    """Inline the copies between the GEMM block and the epilogue (reindex, pad crop) into the
    latter, which then reads the accumulators' buffer."""
    while True:
        copies = [c for c in sch.get_consumers(block) if sch.get(c).name_hint not in keep]
        if not copies:
            return
        for c in copies:
            sch.compute_inline(c)


def copy_out_anchor(sch: s_tir.Schedule, info: KernelInfo) -> KernelInfo:
    """When the anchor's own result is a group output, compute it into an intermediate and copy
    it out in a block of its own (an epilogue block like the others)."""
    anchor = info.anchor_block
    if anchor not in info.output_blocks:
        return info
    wb = sch.cache_write(sch.get_sblock(anchor), 0, "global")
    return dataclasses.replace(info, output_blocks=[sch.get(wb).name_hint] + [
        b for b in info.output_blocks if b != anchor])


def _fragments(lane_of):
    """[..., M, N] tile buffer -> [..., M/16, N/16, lane, slot] in the instruction's layout."""
    def f(*idx):
        *lead, i, j = idx
        return (*lead, i // TILE, j // TILE, *lane_of(i % TILE, j % TILE))

    return f


def schedule(sch: s_tir.Schedule, gemm, a_fill, b_fill, epilogue: list[str], cfg: Config, dtype: str,
             on_gpu: bool = True) -> None:
    """Tile the normalized GEMM block `gemm` (loops *s, m, n, r; extents multiples of the tiles)
    for MFMA. on_gpu=False: the same loops and layouts, unbound and untensorized, in global and
    local buffers, so that llvm can run them (numerics without an AMD GPU)."""
    shared, frag = ("shared", "warp") if on_gpu else ("global", "local")
    bind = sch.bind if on_gpu else (lambda loop, axis: None)
    *batch, m, k, r = sch.get_loops(gemm)
    mo, mi = sch.split(m, factors=[None, TILE])
    ko, ki = sch.split(k, factors=[None, TILE])
    ro, ri = sch.split(r, factors=[None, TILE])
    sch.reorder(mo, ko, ro, mi, ki, ri)
    tile = sch.blockize(mi)  # the inner block is one 16x16x16 step
    bm, wm, fm = sch.split(mo, factors=[None, *cfg["tile_m"][1:]])
    bn, wn, fn = sch.split(ko, factors=[None, *cfg["tile_n"][1:]])
    r0, r1 = sch.split(ro, factors=[None, cfg["tile_k"][1]])
    sch.reorder(bm, bn, wm, wn, r0, r1, fm, fn)
    block = sch.fuse(*batch, bm, bn)
    warp = sch.fuse(wm, wn)
    bind(block, "blockIdx.x")
    bind(warp, "threadIdx.y")
    warps = cfg["tile_m"][1] * cfg["tile_n"][1]

    def by_every_lane(loops):
        fused = sch.fuse(*loops)
        _, ty, tx = sch.split(fused, factors=[None, warps, LANES])
        bind(ty, "threadIdx.y")
        bind(tx, "threadIdx.x")

    for fill in (a_fill, b_fill):  # every lane of the workgroup fills the LDS tiles
        sch.set_scope(fill, 0, shared)
        sch.compute_at(fill, r0, preserve_unit_loops=True)
        by_every_lane(sch.get_loops(fill)[-2:])

    a_frag = sch.cache_read(tile, read_index(sch, tile, sch.get(a_fill).writes[0].source.name), frag)
    b_frag = sch.cache_read(tile, read_index(sch, tile, sch.get(b_fill).writes[0].source.name), frag)
    sch.compute_at(a_frag, r1)
    sch.compute_at(b_frag, r1)
    acc = sch.cache_write(tile, 0, frag)
    sch.reverse_compute_at(acc, warp)
    if on_gpu:
        sch.set_scope(acc, 0, shared)  # the accumulators' way to the epilogue: an LDS tile

    for name in epilogue:  # by every lane of the workgroup, from the LDS tile
        blk = sch.get_sblock(name)
        sch.reverse_compute_at(blk, block)
        by_every_lane(sch.get_loops(blk)[1:])

    ii, jj = sch.get_loops(acc)[-2:]
    io, ii = sch.split(ii, factors=[None, TILE])
    jo, ji = sch.split(jj, factors=[None, TILE])
    sch.reorder(io, jo, ii, ji)
    init = sch.get_child_blocks(sch.decompose_reduction(tile, r0))[0]  # its inner 16x16 block

    def fragment(blk):
        i, j = sch.get_loops(blk)[-2:]
        i0, i1 = sch.split(i, factors=[None, TILE])
        j0, j1 = sch.split(j, factors=[None, TILE])
        sch.reorder(i0, j0, i1, j1)
        return i1

    la, lb = fragment(a_frag), fragment(b_frag)
    sch.transform_layout(a_frag, ("write", 0), _fragments(mfma.lane_a))
    sch.transform_layout(b_frag, ("write", 0), _fragments(mfma.lane_b))
    sch.transform_layout(acc, ("read", 0), _fragments(mfma.lane_c))
    if on_gpu:
        n = mfma.register(dtype)
        sch.tensorize(la, n.load_a)
        sch.tensorize(lb, n.load_b)
        sch.tensorize(sch.get_loops(sch.get_child_blocks(tile)[0])[-3], n.mma)
        sch.tensorize(sch.get_loops(init)[-2], n.fill)
        sch.tensorize(sch.get_loops(acc)[-2], n.store)
    annotate_unroll(sch, r0, cfg["unroll"])


class MfmaGemm(Template):
    """What the MFMA templates share: knobs over 16x16 tile counts, a fallback that fills the
    CUs within the LDS, the arch check, the compile options. A subclass gives the GEMM's tile
    counts (`tiles`) and brings its anchor into GEMM form (`normalize`)."""

    dtypes = mfma.DTYPES

    def tiles(self, info: KernelInfo) -> tuple[int, int, int, int]:
        """(batch, M, N, R tiles of 16) of the GEMM the template computes, padding included."""
        raise NotImplementedError

    def normalize(self, sch: s_tir.Schedule, info: KernelInfo, cfg: Config):
        """-> (GEMM block, A fill, B fill, epilogue block names); see the module docstring."""
        raise NotImplementedError

    def preference(self, info: KernelInfo, target, options: BuildOptions = DEFAULT) -> int:
        """Below the CUDA-family templates (unmeasured on hardware), unless the options prefer
        MFMA (to read or try the MFMA code untuned) on an arch with matrix cores."""
        return DOMINANT if options.prefer_mfma and device_caps(target).has_mfma else -1

    def space(self, info: KernelInfo, target) -> ConfigSpace:
        lim = device_caps(target)
        _, tm, tn, tr = self.tiles(info)
        s = ConfigSpace()
        max_warps = min(MAX_WARPS, lim.max_threads_per_block // lim.warp_size)
        s.define_split("tile_m", tm, 3, filter=lambda c: c[1] <= max_warps and c[2] <= MAX_FRAGS)
        s.define_split("tile_n", tn, 3, filter=lambda c: c[1] <= max_warps and c[2] <= MAX_FRAGS)
        s.define_split("tile_k", tr, 2, filter=lambda c: c[1] <= 4)
        s.define_knob("unroll", list(UNROLL))
        return s

    def fallback(self, info: KernelInfo, target, space: ConfigSpace) -> Config:
        lim = device_caps(target)
        batch, tm, tn, tr = self.tiles(info)
        want = BLOCKS_PER_CU * lim.sm_count
        kt = max(_tiles(tr, 2))
        itemsize = dtype_bytes(info.dtype)
        best, best_score = None, None
        for wm, wn, fm, fn in itertools.product(_tiles(tm, 4), _tiles(tn, 4), _tiles(tm, 4), _tiles(tn, 4)):
            if (tm % (wm * fm) or tn % (wn * fn) or wm * wn > MAX_WARPS
                    or lds_bytes(wm * fm, wn * fn, kt, itemsize) > lim.max_shared_memory_per_block):
                continue
            blocks = batch * (tm // (wm * fm)) * (tn // (wn * fn))
            # fill the CUs first, then 4 wavefronts a workgroup, then 2x2 fragments a wavefront
            score = (min(1.0, blocks / want), -abs(wm * wn - 4), -abs(fm * fn - 4))
            if best_score is None or score > best_score:
                best, best_score = (wm, wn, fm, fn), score
        wm, wn, fm, fn = best  # (1, 1, 1, 1) always fits
        return space.from_values({"tile_m": (tm // (wm * fm), wm, fm), "tile_n": (tn // (wn * fn), wn, fn),
                                  "tile_k": (tr // kt, kt), "unroll": UNROLL[-1]})

    def pass_config(self, info: KernelInfo, cfg: Config, target) -> dict:
        return {"tirx.disable_cse_tir": True, TIR_PIPELINE: PIPELINE}

    def apply(self, sch: s_tir.Schedule, info: KernelInfo, cfg: Config, target) -> None:
        on_gpu = target is None or target.kind.name != "llvm"
        if on_gpu and target is not None and not device_caps(target).has_mfma:
            raise ValueError(f"{self.name} needs matrix cores (CDNA: {', '.join(MFMA_ARCHS)}), "
                             f"not {target.attrs.get('mcpu')}")
        gemm, a_fill, b_fill, epilogue = self.normalize(sch, copy_out_anchor(sch, info), cfg)
        schedule(sch, gemm, a_fill, b_fill, epilogue, cfg, info.dtype, on_gpu)
