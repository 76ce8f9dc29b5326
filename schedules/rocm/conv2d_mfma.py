"""ROCm matrix-core (MFMA) implicit-GEMM conv2d template: float16 in, float32 accumulation,
the fused epilogue applied on the way out. Family "rocm" (CDNA: gfx908, gfx90a, gfx94x).

The conv is viewed as a GEMM as in the CUDA implicit-GEMM template (M = N*OH*OW, N = K output
channels, reduction R = C*KH*KW; `transform_block_layout` + `reindex`), then tiled for TVM's
MFMA intrinsics (schedules/rocm/mfma.py, one `v_mfma_f32_16x16x16_f16` each):

* a workgroup is `warps_m x warps_n` wavefronts of 64 lanes (threadIdx.y, threadIdx.x); each
  wavefront owns `frag_m x frag_n` 16x16 accumulator tiles, 4 float32 a lane (TVM's "warp"
  scope, lowered to registers);
* the im2col tile A[m, r] and the weight tile B[r, k] (stored transposed: the MFMA B operand
  is R-major) are filled into LDS by all lanes at each outer reduction step, `k_tiles` 16-wide
  reduction steps a fill; each wavefront loads its 16x16 operand fragments from LDS;
* the accumulators go to an LDS tile of the workgroup's [M, K] outputs (a store intrinsic to
  "shared" registered here), from which every lane computes the epilogue (bias, batch-norm,
  activation, residual) and writes the output once.

What differs from the CUDA templates: 64-lane wavefronts are the unit of work (a warp there is
32 threads and no template uses tensor cores), fragment sizes are fixed by the instruction, and
tile sizes are capped by the target's LDS (64 KiB) and threads per workgroup; the fallback aims
at two workgroups per compute unit (GpuLimits.sm_count is the CU count of the arch).

Two TVM 0.27 issues are worked around: LowerWarpMemory lowers only the first "warp" buffer of a
kernel per run (the pipeline registered here runs it once per fragment buffer), and TIR common
subexpression elimination hides the lane index from it (turned off for these kernels).

Not run on AMD hardware: the code objects are built and disassembled in CI (v_mfma present),
their numerics are unchecked. The template's preference is below the CUDA-family templates, so
untuned builds keep those (numerically checked on CUDA); tuning on an AMD GPU tries MFMA
configs and checks each against the reference like any candidate.
"""
from __future__ import annotations

import dataclasses
import itertools

import tvm
from tvm import s_tir, tirx

from ...ops.conv2d import Conv2dGeometry
from ...target import gpu_limits
from ..common import annotate_unroll, implicit_gemm_maps, inline_all, read_index
from ..registry import DATA, TIR_PIPELINE, WEIGHT, KernelInfo, Template, register
from ..space import Config, ConfigSpace
from . import mfma
from .mfma import LANES, TILE

ARCHS = ("gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx950")  # CDNA: matrix cores
MAX_WARPS = 8  # wavefronts a workgroup (512 lanes)
MAX_FRAGS = 16  # 16x16 accumulator tiles a wavefront (64 float32 registers a lane)
UNROLL = (0, 256)
BLOCKS_PER_CU = 2
PIPELINE = "tefuse_rocm_mfma"


def _layout(lane_of):
    """[M, N] tile buffer -> [M/16, N/16, lane, slot] fragments in the instruction's layout."""
    return lambda i, j: (i // TILE, j // TILE, *lane_of(i % TILE, j % TILE))


def _pipeline_factory(**_):
    """TVM's default (s_tir) pipeline, with LowerWarpMemory run once per fragment buffer."""
    from tvm.s_tir import pipeline as sp

    main, host, _device = sp.default_s_tir_pipeline()

    def device():
        return tvm.ir.transform.Sequential([tirx.transform.LowerWarpMemory()] * 3
                                           + [tirx.transform.StmtSimplify(), tirx.transform.LowerIntrin()])

    return main, host, device


tvm.tirx.compilation_pipeline.register_tir_pipeline(PIPELINE, _pipeline_factory)


def _tiles(n: int, cap: int) -> list[int]:
    return [d for d in range(1, cap + 1) if n % d == 0]


@register("rocm", "conv2d")
class Conv2dMfma(Template):
    name = "conv2d_mfma"

    def accepts(self, info: KernelInfo) -> bool:
        g = info.geometry
        return (info.dtype == "float16" and g is not None and g.groups == 1
                and g.m % TILE == 0 and g.k % TILE == 0 and g.r % TILE == 0)

    def preference(self, info: KernelInfo, target) -> int:
        return -1  # unmeasured on hardware: untuned builds keep the checked CUDA-family templates

    def space(self, info: KernelInfo, target) -> ConfigSpace:
        g: Conv2dGeometry = info.geometry
        lim = gpu_limits(target)
        tm, tn, tr = g.m // TILE, g.k // TILE, g.r // TILE
        s = ConfigSpace()
        max_warps = min(MAX_WARPS, lim.max_threads_per_block // lim.warp_size)
        s.define_split("tile_m", tm, 3, filter=lambda c: c[1] <= max_warps and c[2] <= MAX_FRAGS)
        s.define_split("tile_n", tn, 3, filter=lambda c: c[1] <= max_warps and c[2] <= MAX_FRAGS)
        s.define_split("tile_k", tr, 2, filter=lambda c: c[1] <= 4)
        s.define_knob("unroll", list(UNROLL))
        return s

    def fallback(self, info: KernelInfo, target, space: ConfigSpace) -> Config:
        g: Conv2dGeometry = info.geometry
        lim = gpu_limits(target)
        tm, tn, tr = g.m // TILE, g.k // TILE, g.r // TILE
        want = BLOCKS_PER_CU * lim.sm_count
        kt = max(_tiles(tr, 2))
        best, best_score = None, None
        for wm, wn, fm, fn in itertools.product(_tiles(tm, 4), _tiles(tn, 4), _tiles(tm, 4), _tiles(tn, 4)):
            if (tm % (wm * fm) or tn % (wn * fn) or wm * wn > MAX_WARPS
                    or self.lds_bytes(wm * fm, wn * fn, kt) > lim.max_shared_memory_per_block):
                continue
            blocks = (tm // (wm * fm)) * (tn // (wn * fn))
            # fill the CUs first, then 4 wavefronts a workgroup, then 2x2 fragments a wavefront
            score = (min(1.0, blocks / want), -abs(wm * wn - 4), -abs(fm * fn - 4))
            if best_score is None or score > best_score:
                best, best_score = (wm, wn, fm, fn), score
        wm, wn, fm, fn = best  # (1, 1, 1, 1) always fits
        return space.from_values({"tile_m": (tm // (wm * fm), wm, fm), "tile_n": (tn // (wn * fn), wn, fn),
                                  "tile_k": (tr // kt, kt), "unroll": UNROLL[-1]})

    @staticmethod
    def lds_bytes(bm: int, bn: int, kt: int) -> int:
        """LDS of one workgroup of bm x bn 16x16 tiles, kt 16-wide reduction steps a fill:
        the float16 A and B tiles and the float32 output tile."""
        return 2 * (bm + bn) * TILE * kt * TILE + 4 * (bm * TILE) * (bn * TILE)

    def pass_config(self, info: KernelInfo, cfg: Config, target) -> dict:
        return {"tirx.disable_cse_tir": True, TIR_PIPELINE: PIPELINE}

    def apply(self, sch: s_tir.Schedule, info: KernelInfo, cfg: Config, target) -> None:
        if target is not None and str(target.attrs.get("mcpu", "")) not in ARCHS:
            raise ValueError(f"conv2d_mfma needs matrix cores (CDNA: {', '.join(ARCHS)}), "
                             f"not {target.attrs.get('mcpu')}")
        mfma.register()
        g: Conv2dGeometry = info.geometry
        anchor = info.anchor_block
        staged = info.staged(DATA, WEIGHT)
        inline_all(sch, info, keep=staged)
        conv = sch.get_sblock(anchor)
        out_map, conv_map = implicit_gemm_maps(g)
        if anchor in info.output_blocks:  # the conv's own result is an output: a copy-out block
            wb = sch.cache_write(conv, 0, "global")
            info = dataclasses.replace(info, output_blocks=[sch.get(wb).name_hint] + [
                b for b in info.output_blocks if b != anchor])
        epilogue = [b for b in info.output_blocks if b != anchor]
        sch.transform_layout(conv, ("write", 0), out_map)
        sch.transform_block_layout(conv, conv_map)
        for name in epilogue:
            sch.transform_block_layout(sch.get_sblock(name), out_map)

        # im2col A[m, r] and the weights as B[r, k] (the MFMA B operand), filled into LDS
        a_fill = sch.reindex(conv, ("read", read_index(sch, conv, info.operands[DATA])))
        b_fill = sch.reindex(conv, ("read", read_index(sch, conv, info.operands[WEIGHT])))
        for name in staged:
            sch.compute_inline(sch.get_sblock(name))
        transpose = lambda i, j: (j, i)  # noqa: E731
        sch.transform_layout(b_fill, ("write", 0), transpose)
        sch.transform_block_layout(b_fill, transpose)

        # 16x16x16 tiles: the inner block is one MFMA
        m, k, r = sch.get_loops(conv)
        mo, mi = sch.split(m, factors=[None, TILE])
        ko, ki = sch.split(k, factors=[None, TILE])
        ro, ri = sch.split(r, factors=[None, TILE])
        sch.reorder(mo, ko, ro, mi, ki, ri)
        tile = sch.blockize(mi)
        bm, wm, fm = sch.split(mo, factors=list(cfg["tile_m"]))
        bn, wn, fn = sch.split(ko, factors=list(cfg["tile_n"]))
        r0, r1 = sch.split(ro, factors=list(cfg["tile_k"]))
        sch.reorder(bm, bn, wm, wn, r0, r1, fm, fn)
        block = sch.fuse(bm, bn)
        warp = sch.fuse(wm, wn)
        sch.bind(block, "blockIdx.x")
        sch.bind(warp, "threadIdx.y")
        warps = cfg["tile_m"][1] * cfg["tile_n"][1]

        for fill in (a_fill, b_fill):  # every lane of the workgroup fills the LDS tiles
            sch.set_scope(fill, 0, "shared")
            sch.compute_at(fill, r0, preserve_unit_loops=True)
            fused = sch.fuse(*sch.get_loops(fill)[-2:])
            _, ty, tx = sch.split(fused, factors=[None, warps, LANES])
            sch.bind(ty, "threadIdx.y")
            sch.bind(tx, "threadIdx.x")

        a_frag = sch.cache_read(tile, read_index(sch, tile, sch.get(a_fill).writes[0].source.name), "warp")
        b_frag = sch.cache_read(tile, read_index(sch, tile, sch.get(b_fill).writes[0].source.name), "warp")
        sch.compute_at(a_frag, r1)
        sch.compute_at(b_frag, r1)
        acc = sch.cache_write(tile, 0, "warp")
        sch.reverse_compute_at(acc, warp)
        sch.set_scope(acc, 0, "shared")  # the accumulators' way to the epilogue: an LDS tile

        # the epilogue, by every lane of the workgroup, from the LDS tile
        for name in epilogue:
            blk = sch.get_sblock(name)
            sch.reverse_compute_at(blk, block)
            fused = sch.fuse(*sch.get_loops(blk)[1:])
            _, ty, tx = sch.split(fused, factors=[None, warps, LANES])
            sch.bind(ty, "threadIdx.y")
            sch.bind(tx, "threadIdx.x")

        ii, jj = sch.get_loops(acc)[-2:]
        io, ii = sch.split(ii, factors=[None, TILE])
        jo, ji = sch.split(jj, factors=[None, TILE])
        sch.reorder(io, jo, ii, ji)
        sch.decompose_reduction(tile, r0)
        init = sch.get_sblock(f"{anchor}_init")  # the inner (16x16) block of the outer init

        def fragment(blk, h, w):
            i, j = sch.get_loops(blk)[-2:]
            i0, i1 = sch.split(i, factors=[None, h])
            j0, j1 = sch.split(j, factors=[None, w])
            sch.reorder(i0, j0, i1, j1)
            return i1

        la = fragment(a_frag, TILE, TILE)
        lb = fragment(b_frag, TILE, TILE)
        sch.transform_layout(a_frag, ("write", 0), _layout(mfma.lane_a))
        sch.transform_layout(b_frag, ("write", 0), _layout(mfma.lane_b))
        sch.transform_layout(acc, ("read", 0), _layout(mfma.lane_c))
        sch.tensorize(la, mfma.LOAD_A)
        sch.tensorize(lb, mfma.LOAD_B)
        sch.tensorize(sch.get_loops(sch.get_sblock(anchor))[-3], mfma.MMA)
        sch.tensorize(sch.get_loops(init)[-2], mfma.FILL)
        sch.tensorize(sch.get_loops(acc)[-2], mfma.STORE)

        annotate_unroll(sch, r0, cfg["unroll"])
