"""The Hopper tensor-core schedule (intrin="wgmma", sm_90a), what the `WgmmaGemm` template
(template.py) applies: fp16/bf16, tf32, int8 and float8-code GEMMs with B stored (N, K) on
wgmma.mma_async instead of mma.sync.

Same normalisation, padding, cp.async pipeline and fused epilogue as mma.py's `apply_mma_gemm`
(the shared parts in tiles.py); what differs (see intrin/wgmma.py for the layouts):
- warps tile M only: warp w owns rows 16w..16w+15 and all BN columns (BM / 16 warps, BM a
  multiple of 64: whole warpgroups); its accumulators are a warp-scope [BN/16, 32, 8] buffer
  in TVM's mma layout, filled and stored by TVM's mma fill/store intrinsics;
- BK = 64 (fp16/bf16) or 32 (tf32): the shared A [BM][BK] and B [BN][BK] tiles are exactly 128
  bytes a row, no padding, in the 128-byte swizzle (a layout transform on the shared buffers, so
  the cp.async copies write them swizzled); the tensor cores read them from there, with no
  ldmatrix and no fragments;
- each warp's 16 x BN x BK product is one call of the wgmma device function (4 instructions);
- tf32: the op's rounding (ops.value.round_tf32) would make the tile copies computed loads, so it
  is taken out of the func before scheduling (`defer_tf32_rounding`), cp.async streams the raw
  float32 operands, and the wgmma device function rounds the landed tiles in shared memory.
"""
from __future__ import annotations

import math
from typing import Optional

import tvm
from tvm.s_tir.dlight.gpu.matmul import IterKind, detect_iter_traits, make_iter_fusion_index_map

from ....ops.value import unround_tf32
from ....target import SMEM_OPTIN, device_caps, optin_target
from ...common import dtype_bytes
from ..intrin.tvm_library import tvm_cuda_intrinsics
from ..passes.clamp_rows import ROWS_ANNOTATION
from .cluster import cluster_split
from .sliced_k import SLICE_AXIS, stage_sum
from .tiles import (DEFAULT_CFG, bind_grid, drop_unit_iters, fetch_to_shared, grid_order, intrin_names,
                    last_index_kind, operand_k_major, stage_accumulators, staging_row_stride, store_epilogue,
                    tensorize_staging_store)
from ..intrin.wgmma import (N_CHOICES, PTX_TYPE, acc_dtype, bk_of, chunk_elems, promotes, storage, store_intrin,
                            swizzle_index_map, wgmma_intrin)

HOPPER_SMEM_OPTIN = SMEM_OPTIN["sm_90a"]  # bytes of dynamic shared memory a block may opt into (227 KB)
ASYNC_WGMMA = True  # a pipelined k loop keeps one wgmma batch in flight (intrin/wgmma.py)
# the widest tile of a type whose rows' sums are promoted (float8): its accumulators and the row's
# sum are 2 x BN / 2 registers a thread, 128 of them at BN 128 (3 x BN / 2 with a batch in flight,
# the two rows' sums: passes/row_sums.py)
MAX_PROMOTED_BN = 128
# registers a wgmma thread holds besides its accumulators and row sums (addresses, descriptors,
# the epilogue's indices): a float8 kernel of 128x128 blocks with d[] and t[] took 166 (ptxas)
OTHER_REGISTERS = 40
REGISTER_FILE = 65536  # 32-bit registers of an SM, which one block's threads share at most


def keeps_batch_in_flight(stages: int) -> bool:
    """Whether the k loop of `stages` keeps one wgmma batch in flight: only where the step's copies
    go to the tiles the previous step read. With the copies after the product in the body, TVM's
    pipeline keeps `stages` tile versions from 3 stages on, but one for 2 stages (the next copy
    would overwrite the tiles the batch in flight reads), and with 1 stage there is no pipeline."""
    return stages >= 3 and ASYNC_WGMMA


def promoted_fits(bm: int, bn: int, stages: int) -> bool:
    """Whether a block of promoted rows (float8) keeps its accumulators and row sums in registers:
    BN / 2 floats a thread each, the row sums twice with a batch in flight, in a register file
    the block's BM / 16 warps share (at most 255 a thread)."""
    floats = bn // 2 * (3 if keeps_batch_in_flight(stages) else 2) + OTHER_REGISTERS
    return floats <= 255 and bm // 16 * 32 * floats <= REGISTER_FILE


def wgmma_target(target):
    """`target` as sm_90a with Hopper's opt-in shared memory: what a wgmma kernel compiles for
    (the 48 KB default of tefuse's targets would hold no BK=64 pipeline)."""
    return optin_target(tvm.target.Target({**target.export(), "arch": "sm_90a"}))


# the untuned epilogue's vector width: 4 lanes a thread read the staging tile as one float4, so a
# quarter warp reads 32 consecutive words (no bank conflict; a thread's 8 as two float4s put eight
# lanes on 16 banks) and stores 8 bytes; the 15 ResNet-50 convs at batch 16 took 0.95x the time of
# vec_out 8 (geomean; H200)
VEC_OUT = 4


def fallback_values(m: int, n: int, sms: int, dtype: str = "float16", k: Optional[int] = None,
                    channels: Optional[int] = None) -> dict:
    """The untuned wgmma config: a cluster split (`slices`, cluster.cluster_split) for a deep
    small-grid conv whose `channels` are given; otherwise, from H100 sweeps of every block tile
    and stage count (GEMMs, and the 15 ResNet-50 convs at batch 16): 128x128 blocks, 3 stages,
    when they give every SM two blocks (4096^3: 0.28 ms, cuBLAS 0.20), or 192x192 where that
    takes fewer waves (`_fewer_waves_at_192`); 128x128 too where they make one block an SM for
    4/5 of the SMs or more: a block's operand tiles come from L2, and 128x128 reads a third less
    of them than 64x128 (512x7x7->2048 at batch 16, 112 blocks: 7.5 us against 8.2 at 64x128.
    Not past one an SM: 256x14x14->1024, 200 blocks, took 8.5 us against 7.3 at 64x128; H200);
    else 64x128 blocks, 4 stages, twice the blocks for short or narrow GEMMs (197x2304x768 at
    0.89x cuBLAS's time, 6272x256x2304 at 1.00x, where 128x128 took 1.2-1.4x); 64x64 where 64x128
    leaves SMs idle (the 14x14 convs at batch 16: 98 blocks of 64x128 on 132 SMs took 1.1-1.15x
    the time of 196 of 64x64, measured with an earlier, slower epilogue; with today's
    (docs/hopper.md, "The epilogue") a reduction 2048 deep or more takes 64x128 all the same where
    that leaves at most 3/10 of the SMs idle, `_deep_enough_for_64x128`, and 128x192 where that
    is one wave of nearly every SM, `_one_deep_wave_at_128x192`; ResNet-50's tuned
    batch-1 records of unsplit 1x1 convs are all 64x64). N <= 64 takes 64-wide tiles. No more
    stages than the reduction has steps less one (`k`): 4 stages over a 256-deep reduction took
    1.2-1.3x the time of 3 (the pipeline's fill is the whole loop). (128x64 blocks of 2 stages
    for shallow reductions, as ResNet-50's batch-32 records of 1x1 convs have, made its batch-16
    1x1 convs 1-13% slower on the H100.) A tf32 tile row holds 32 elements in the same 128 bytes,
    so the same stages fit."""
    common = {"bk": bk_of(dtype), "intrin": "wgmma", "vec_out": VEC_OUT}
    cluster = cluster_split(m, n, k, channels, chunk_elems(dtype), sms) if k is not None and channels is not None else None
    if cluster is not None:  # a deep small grid: slices of K in a cluster's CTAs (passes/cluster_sum.py)
        (bm, bn), slices = cluster
        tile, stages = ((128, 128, 64, 64), 3) if (bm, bn) == (128, 128) else ((64, 128, 32, 64), 4)
        stages = min(stages, max(2, math.ceil(k / slices / common["bk"]) - 1))
        return {"tile": tile, "stages": stages, "slices": slices, **common}
    if n <= 64:  # ResNet's 64-channel convs: a 128-wide tile would be half padding
        if _blocks(m, n, 128, 64) >= 2 * sms:
            tile, stages = (128, 64, 64, 32), 3
        else:
            tile, stages = (64, 64, 32, 32), 4
    elif _blocks(m, n, 128, 128) >= 2 * sms:
        tile, stages = ((192, 192, 64, 64) if _fewer_waves_at_192(m, n, sms) else (128, 128, 64, 64)), 3
    elif 4 * sms <= 5 * _blocks(m, n, 128, 128) <= 5 * sms:  # one 128x128 block an SM, 4/5 of them
        tile, stages = (128, 128, 64, 64), 3
    elif _one_deep_wave_at_128x192(m, n, sms, k, dtype):
        tile, stages = (128, 192, 64, 64), 4
    elif _blocks(m, n, 64, 128) < sms and not _deep_enough_for_64x128(m, n, sms, k):
        tile, stages = (64, 64, 32, 32), 4  # SMs idle even so: twice the blocks again
    else:
        tile, stages = (64, 128, 32, 64), 4
    if k is not None:
        stages = min(stages, max(2, math.ceil(k / common["bk"]) - 1))
    return {"tile": tile, "stages": stages, **common}


def _one_deep_wave_at_128x192(m: int, n: int, sms: int, k: Optional[int], dtype: str) -> bool:
    """Whether 128x192 blocks of a 16-bit reduction 2048 deep or more make one wave that fills
    9/10 of the SMs or more, N a whole number of them. BERT-base's second MLP product at batch 32
    (4096 x 768 x 3072, bias and residual; 128 blocks): 34.4 us against 47.3 at 64x128 (384
    blocks), 39.9 at 128x128 and 41.7 at 192x192 (88 blocks), alternating in one process on an
    H200. Its first (768 deep) stays 128x128: 47.8 us against 51.9."""
    if k is None or k < 2048 or dtype not in ("float16", "bfloat16") or n % 192:
        return False
    return 9 * sms <= 10 * _blocks(m, n, 128, 192) <= 10 * sms


def _deep_enough_for_64x128(m: int, n: int, sms: int, k: Optional[int]) -> bool:
    """Whether 64x128 blocks that leave at most 3/10 of the SMs idle still beat twice as many 64x64
    ones: for reductions 2048 deep or more, whose operand tiles (a third less L2 traffic at
    64x128) outweigh the idle SMs. 256x14x14->256 3x3 at batch 16 (98 blocks, 2304 deep): 15.2 us
    against 16.3 on the H100, 15.6 against 16.8 on the H200; 1024x14x14->256 (1024 deep): a
    tie."""
    return k is not None and k >= 2048 and 10 * _blocks(m, n, 64, 128) >= 7 * sms


def _blocks(m: int, n: int, bm: int, bn: int) -> int:
    """Blocks of a BM x BN tiling of an M x N output."""
    return math.ceil(m / bm) * math.ceil(n / bn)


# (An image stem's windows were once loaded unpipelined, 1 stage, where its grid held two blocks
# an SM: while each 16-byte copy held one 8-channel pixel, plain loads through L1 beat cp.async.
# Since its pixels are read in pairs (graph/weights.pair_pixels) 3 stages win: 43.6 us
# against 46.6 for the ResNet-50 stem at batch 16, 2 stages 42.7; H200)


# bytes TVM's shared-memory merge may add past `wgmma_shared_bytes` (measured from the lowered
# kernels: up to 16 KB, e.g. 192x256 at 4 stages takes 240 KB where its pipeline is 224)
SMEM_MERGE_SLACK = 16 * 1024


def wgmma_shared_bytes(bm: int, bn: int, stages: int) -> int:
    """Dynamic shared memory of a wgmma block before the merge's slack: the pipeline's 128-byte
    tile rows (A and B, `stages` versions), or the float32 staging tile, which reuses them but
    for up to one version of the tiles (measured on lowered kernels with unpadded staging rows:
    256x192 at 2 stages took 240 KB, the staging tile's 192 and 48 more; at 3 and 4 stages, the
    larger of the two). The staging rows are `staging_row_stride` floats apart (padded). Sized as
    float32 even where passes/narrow_staging.py makes the tile 16-bit (fp16/bf16 results): the
    space stays as it was measured, at the cost of refusing some configs that would now fit."""
    return max(max(stages, 1) * (bm + bn) * 128, bm * staging_row_stride(bn) * 4 + (bm + bn) * 128)


def _fewer_waves_at_192(m: int, n: int, sms: int) -> bool:
    """Whether one 192x192 block an SM finishes the grid clearly sooner than two 128x128 blocks
    an SM (the H100 and H200 hold two of those at 3 stages, one 192x192): each wave of an SM
    computes 2 * 128^2 or 192^2 outputs; 15% less work in whole waves to switch. ViT-B/16 b32's
    N = 768 products (6304 rows: 132 blocks of 192x192, one wave, where 300 blocks of 128x128
    take two) took 0.017-0.047 ms at 192x192 against 0.021-0.067 at 128x128; N = 3072 (10% less)
    was a tie (H200)."""
    waves = lambda bm, bn, per_sm: math.ceil(_blocks(m, n, bm, bn) / (per_sm * sms))
    return waves(192, 192, 1) * 192 * 192 * 1.15 < waves(128, 128, 2) * 2 * 128 * 128


def wgmma_admits(values: dict, dtype: str, tiles=None) -> bool:
    """Whether a tensor-core config is one apply_wgmma_gemm takes (any mma/wmma config is): tiles
    one 128-byte row deep (bk 128 for one-byte types, 64 for fp16/bf16, 32 for tf32), whole
    warpgroups of rows. With the
    space's `tiles`, only the first tile of each (BM, BN) is taken: wgmma has no warp tile (warps
    own 16-row strips), so (128, 128, 64, 64) and (128, 128, 64, 32) are one kernel, and a tuner
    would measure it twice. Nor blocks past Hopper's opt-in shared memory (256x192 at 2 or 4
    stages: the launch failed)."""
    if values["intrin"] != "wgmma":
        return True
    bm, bn = values["tile"][:2]
    first = next((tuple(t) for t in tiles or () if tuple(t[:2]) == (bm, bn)), tuple(values["tile"]))
    fits = wgmma_shared_bytes(bm, bn, int(values["stages"])) + SMEM_MERGE_SLACK <= HOPPER_SMEM_OPTIN
    return values["bk"] == bk_of(dtype) and bm % 64 == 0 and tuple(values["tile"]) == first and fits


def defer_tf32_rounding(func):
    """`func` with the TF32 rounding of its GEMM operands taken out, for the wgmma intrinsic to do
    on the tiles in shared memory (intrin/wgmma.py): inside the tile copies it would keep
    cp.async from streaming them. Only the wgmma schedule may use it: the func alone no longer
    rounds."""
    from tvm import tirx
    from tvm_ffi import structural_map

    return structural_map(func, (tirx.Select, unround_tf32))


def apply_wgmma_gemm(sch, gemm_block, epilogue_blocks, cfg, target) -> dict:
    c = dict(DEFAULT_CFG)
    c.update(cfg or {})
    on_gpu = device_caps(target).kind == "cuda"
    tensorize = bool(c["tensorize"]) and on_gpu
    BM, BN = int(c["BM"]), int(c["BN"])
    if BM % 64:
        raise ValueError(f"wgmma needs BM a multiple of 64 (whole warpgroups), not {BM}")
    if BN not in N_CHOICES:
        raise ValueError(f"wgmma needs BN a multiple of 16 up to 256, not {BN}")
    warps_m = BM // 16
    n_warps = warps_m
    slices = int(c.get("slices", 1))
    stages = int(c["stages"])
    # inflight: the stages the intrinsic is built for (0: each batch waited for, the body's copies
    # first)
    inflight = stages if keeps_batch_in_flight(stages) else 0

    block = sch.get_sblock(gemm_block)
    drop_unit_iters(sch, block)
    blk = sch.get(block)
    in_dtype = c["in_dtype"] or blk.reads[0].source.dtype
    op_type = c.get("codes") or in_dtype  # float8 codes: byte tiles the instruction reads as e4m3/e5m2
    # each row's sum is added to the accumulators once done (intrin/wgmma.py), unless the product
    # may sum in the tensor cores' accumulator (ops/codes.fast_accumulation)
    promoted = promotes(op_type) and not c.get("fast_accum")
    if promoted:
        if BN > MAX_PROMOTED_BN:
            raise ValueError(f"wgmma {op_type}: BN {BN} > {MAX_PROMOTED_BN} (a row's sum doubles the accumulator registers)")
    if storage(op_type) != in_dtype:
        raise ValueError(f"wgmma: {op_type} operands are held as {storage(op_type)}, not {in_dtype}")
    if op_type not in PTX_TYPE:
        raise ValueError(f"wgmma takes {', '.join(PTX_TYPE)} operands, not {op_type}")
    if blk.reads[1].source.dtype != in_dtype:
        raise ValueError("wgmma needs both operands of one type")
    acc_type = acc_dtype(op_type)
    if blk.writes[0].source.dtype != acc_type:
        raise ValueError(f"wgmma accumulates {op_type} products in {acc_type}, not {blk.writes[0].source.dtype}")
    BK = bk_of(in_dtype)
    if int(c["BK"]) != BK:
        raise ValueError(f"wgmma {in_dtype} tiles are {BK} deep (one 128-byte swizzle row), not BK={c['BK']}")

    # ---------------------------------------------------------------- 1. normalize
    traits = detect_iter_traits(blk)
    assert traits is not None, f"{gemm_block} is not a GEMM-like block"
    A_tr, B_tr, C_tr, blk_tr = traits
    kinds_by_var = {iv.var: t.kind for iv, t in zip(blk.iter_vars, blk_tr)}
    a_last = last_index_kind(blk, 0, kinds_by_var)
    if c.get("a_m_major") or IterKind.kIter_K not in a_last:
        raise ValueError("wgmma path: A must be stored K-fastest (row-major [M, K])")
    if not operand_k_major(sch, block, 1, kinds_by_var, chunk_elems(in_dtype)):
        raise ValueError("wgmma path: B must be stored (N, K) (K-major); others use mma")
    if c.get("c_m_major"):
        raise ValueError("wgmma path: M-fastest (NCHW) outputs are not supported")

    S, I, J, K = IterKind.kIter_S, IterKind.kIter_I, IterKind.kIter_J, IterKind.kIter_K
    ra = sch.reindex(block, ("read", 0))
    rb = sch.reindex(block, ("read", 1))
    rc = sch.reindex(block, ("write", 0))
    sch.transform_layout(ra, ("write", 0), make_iter_fusion_index_map(A_tr, [S, I, K]))
    sch.transform_layout(rb, ("write", 0), make_iter_fusion_index_map(B_tr, [S, J, K]))
    sch.transform_layout(rc, ("read", 0), make_iter_fusion_index_map(C_tr, [S, I, J]))
    sch.transform_block_layout(block, make_iter_fusion_index_map(blk_tr, [S, I, J, K]))

    # ---------------------------------------------------------------- 2. pad to tiles
    sch.pad_einsum(block, [1, BM, BN, BK])

    # ---------------------------------------------------------------- 3. tile
    b, i, j, k = sch.get_loops(block)
    i, i16 = sch.split(i, [None, 16])
    j, jn = sch.split(j, [None, BN])
    k, kb = sch.split(k, [None, BK])
    sch.reorder(i, j, k, i16, jn, kb)
    block_inner = block
    block_outer = sch.blockize(i16)  # one warp's 16 x BN x BK product
    i0, i1 = sch.split(i, [None, warps_m])
    k0, ty = k, i1
    if slices > 1:  # the slices are CTAs of one cluster (sliced_k.py, cluster_sum.py)
        if int(sch.get(b).extent) != slices:
            raise ValueError(f"sliced K takes a GEMM without a batch axis ({int(sch.get(b).extent)} != {slices})")
        sch.reorder(i0, j, b, i1, k)
        if on_gpu:
            sch.bind(i0, "blockIdx.y")
            sch.bind(j, "blockIdx.x")
            sch.bind(b, SLICE_AXIS)
            sch.bind(ty, "threadIdx.y")
    else:
        sch.reorder(b, i0, j, i1, k)
        if on_gpu:
            bind_grid(sch, b, i0, j, ty, grid_order(sch, i0, j, k, BM, BN, BK, dtype_bytes(in_dtype), target))

    sh_scope = "shared.dyn" if on_gpu else "global"
    frag_c = "warp" if on_gpu else "local"

    # ---------------------------------------------------------------- 4. global -> shared
    # 16-byte copies at most: the shared tiles' 128-byte rows are swizzled in 16-byte chunks (an
    # int8 tile's 16 values a chunk, as mma.py's; masked ones: passes/int_tile_copies.py)
    vec_max = chunk_elems(in_dtype) if dtype_bytes(in_dtype) == 1 else min(int(c["vec"]), chunk_elems(in_dtype))
    fetch = dict(k_loop=k0, scope=sh_scope, vec_max=vec_max, n_warps=n_warps,
                 on_gpu=on_gpu)
    a_g2s, vec_a = fetch_to_shared(sch, block_outer, 0, **fetch)
    b_g2s, vec_b = fetch_to_shared(sch, block_outer, 1, **fetch)
    # the shared tiles in the 128-byte swizzle (swizzle_dims): the copies write them so, and the
    # product reads them so (the tensor cores undo the swizzle from the descriptor's mode bits)
    for g2s in (a_g2s, b_g2s):
        sch.transform_layout(g2s, ("write", 0), swizzle_index_map(in_dtype),
                             assume_injective_transform=True)
        sch.annotate(g2s, ROWS_ANNOTATION, 1)  # rows past M or N read real rows (clamp_rows.py)

    # ---------------------------------------------------------------- 5. accum -> shared -> epilogue
    if slices > 1:  # each CTA's partial tile staged; their sum and the epilogue, a part of the rows each
        acc_sh, acc, ai0, aj0 = stage_accumulators(sch, block_outer, ty, sh_scope, frag_c, place_staging=False)
        vec_out = stage_sum(sch, acc_sh, epilogue_blocks[0], j, slices=slices, warps=warps_m,
                            vec_max=int(c["vec_out"]), on_gpu=on_gpu, target=target)
    else:
        acc_sh, acc, ai0, aj0 = stage_accumulators(sch, block_outer, ty, sh_scope, frag_c)
        vec_out = store_epilogue(sch, acc_sh, epilogue_blocks, int(c["vec_out"]), BN, on_gpu, target=target)

    init = sch.decompose_reduction(block_outer, k0)
    init_inner = sch.get_child_blocks(init)[0]
    ii, ij = sch.get_loops(init_inner)[-2:]
    ij0, ij1 = sch.split(ij, [None, 16])
    sch.reorder(ij0, ii, ij1)
    # the accumulators must stay registers (wgmma's "+f" operands): constant indices only
    for lp in (ij0, ai0, aj0):
        sch.unroll(lp)

    # ---------------------------------------------------------------- 6. tensorize
    if tensorize:
        lay = tvm_cuda_intrinsics().shared_16x16_to_ldmatrix_32x8_layout

        sch.transform_layout(acc, ("read", 0),
                             lambda b_, i_, j_: (b_, i_ // 16, j_ // 16, *lay(i_ % 16, j_ % 16)))
        # the accumulators' fill and store: TVM's mma intrinsics of that accumulator type
        names = intrin_names("mma", "int8" if acc_type == "int32" else "float16", acc_type, sh_scope, True)
        sch.tensorize(sch.get_loops(init_inner)[-2], names["init"])
        tensorize_staging_store(sch, acc, store_intrin(names["store"], sh_scope, acc_type, drain=bool(inflight)))
        sch.tensorize(sch.get_loops(block_inner)[-3], wgmma_intrin(BN, op_type, sh_scope, inflight, promoted))

    # ---------------------------------------------------------------- 7. pipelining
    if stages >= 2:
        sch.annotate(k0, "software_pipeline_stage", [0, 0, stages - 1])
        # inflight: the product first in the body, so a step's copies (into the tiles the previous
        # step's wgmma read) follow its wait for that wgmma (intrin/wgmma.py)
        sch.annotate(k0, "software_pipeline_order", [1, 2, 0] if inflight else [0, 1, 2])
        if on_gpu:
            sch.annotate(k0, "software_pipeline_async_stages", [0])

    return {"vec_a": vec_a, "vec_b": vec_b, "vec_out": vec_out, "b_nk": True, "n_warps": n_warps}
