"""The tensor-core GEMM on mma.sync + ldmatrix or wmma (sm_70/sm_80 and later): fp16/bf16 with
float32 accumulation, float32 ops built with math='tf32' on mma.sync m16n8k8 (intrin/tf32.py), and
int8 operands accumulating int32 (a QDQ model's anchors, graph/qdq.py) on mma.sync m16n8k32.

`apply_mma_gemm` reindexes the block to C[s, i, j] += A[s, i, k] * B[s, j, k], pads it to the block
tile (masked tails, never CUDA cores), tiles it over a grid of warps, stages the operands global ->
shared -> fragments and stores the accumulators through tiles.py's staging tile and epilogue.
"""
from __future__ import annotations

import math

from tvm.s_tir.dlight.gpu.matmul import IterKind, detect_iter_traits, make_iter_fusion_index_map

from ....target import device_caps
from ...common import dtype_bytes
from ..intrin.tf32 import lay_a, lay_b
from ..intrin.tvm_library import tvm_cuda_intrinsics
from .tiles import (DEFAULT_CFG, bind_grid, drop_unit_iters, fetch_to_shared, grid_order, intrin_names,
                    last_index_kind, operand_k_major, stage_accumulators, store_epilogue, tensorize_staging_store)


def apply_mma_gemm(sch, gemm_block, epilogue_blocks, cfg, target) -> dict:
    c = dict(DEFAULT_CFG)
    c.update(cfg or {})
    on_gpu = device_caps(target).kind == "cuda"
    tensorize = bool(c["tensorize"]) and on_gpu
    intrin = c["intrin"]
    BM, BN, BK, WM, WN = (int(c[k]) for k in ("BM", "BN", "BK", "WM", "WN"))
    assert BM % WM == 0 and BN % WN == 0, "block tile must be a multiple of the warp tile"
    assert WM % 16 == 0 and WN % 16 == 0 and BK % 16 == 0, "tiles must be multiples of 16"
    warps_m, warps_n = BM // WM, BN // WN
    n_warps = warps_m * warps_n
    stages = int(c["stages"])

    block = sch.get_sblock(gemm_block)
    drop_unit_iters(sch, block)  # a 1x1 conv's ry, rx and a batch of 1: reindex cannot take them
    blk = sch.get(block)
    in_dtype = c["in_dtype"] or blk.reads[0].source.dtype
    out_dtype = blk.writes[0].source.dtype
    if in_dtype == "float32" and intrin != "mma":
        raise ValueError("float32 operands (tf32) go through mma.sync m16n8k8 only")
    KT = {"float32": 8, "int8": 32}.get(in_dtype, 16)  # the fragments' K: tf32 is m16n8k8, int8 m16n8k32
    if in_dtype == "int8" and intrin != "mma":
        raise ValueError("int8 operands go through mma.sync m16n8k32 only")
    if in_dtype == "float32":
        c["vec"] = min(int(c["vec"]), 4)  # cp.async moves at most 16 bytes
    if in_dtype == "int8":  # 16 bytes a thread, as fp16's 8 (masked int8 tiles: passes/int_tile_copies.py)
        c["vec"] = 16
    frag_m, frag_n, k_inner = WM // 16, WN // 16, BK // KT

    # ---------------------------------------------------------------- 1. normalize
    traits = detect_iter_traits(blk)
    assert traits is not None, f"{gemm_block} is not a GEMM-like block"
    A_tr, B_tr, C_tr, blk_tr = traits
    kinds_by_var = {iv.var: t.kind for iv, t in zip(blk.iter_vars, blk_tr)}
    a_last = last_index_kind(blk, 0, kinds_by_var)
    # A whose memory runs along M (NCHW data: consecutive output pixels) is copied M-fastest, so a
    # warp's loads coalesce; the shared tile stays [M, K] for ldmatrix, filled element by element
    a_m_major = bool(c.get("a_m_major")) or IterKind.kIter_K not in a_last
    # B stored (N, K), or computed from (N, K) data (attention's K^T) -> "trans_b"
    b_nk = operand_k_major(sch, block, 1, kinds_by_var, 4 if in_dtype == "float32" else 8)

    S, I, J, K = IterKind.kIter_S, IterKind.kIter_I, IterKind.kIter_J, IterKind.kIter_K
    ra = sch.reindex(block, ("read", 0))
    rb = sch.reindex(block, ("read", 1))
    rc = sch.reindex(block, ("write", 0))
    sch.transform_layout(ra, ("write", 0), make_iter_fusion_index_map(A_tr, [S, I, K]))
    sch.transform_layout(
        rb, ("write", 0), make_iter_fusion_index_map(B_tr, [S, J, K] if b_nk else [S, K, J])
    )
    sch.transform_layout(rc, ("read", 0), make_iter_fusion_index_map(C_tr, [S, I, J]))
    sch.transform_block_layout(block, make_iter_fusion_index_map(blk_tr, [S, I, J, K]))

    # ---------------------------------------------------------------- 2. pad to tiles
    sch.pad_einsum(block, [1, BM, BN, BK])

    # ---------------------------------------------------------------- 3. tile
    b, i, j, k = sch.get_loops(block)
    i, i16 = sch.split(i, [None, 16])
    j, j16 = sch.split(j, [None, 16])
    k, k16 = sch.split(k, [None, KT])
    sch.reorder(i, j, k, i16, j16, k16)
    block_inner = block
    block_outer = sch.blockize(i16)
    i0, i1, i2 = sch.split(i, [None, warps_m, frag_m])
    j0, j1, j2 = sch.split(j, [None, warps_n, frag_n])
    k0, k1 = sch.split(k, [None, k_inner])
    sch.reorder(b, i0, j0, i1, j1, k0, k1, i2, j2)
    ty = sch.fuse(i1, j1)
    if on_gpu:
        bind_grid(sch, b, i0, j0, ty, grid_order(sch, i0, j0, k0, BM, BN, BK, dtype_bytes(in_dtype), target))

    sh_scope = "shared.dyn" if on_gpu else "global"
    if intrin == "wmma":
        frag_a, frag_b, frag_c = ("wmma.matrix_a", "wmma.matrix_b", "wmma.accumulator")
    else:
        frag_a, frag_b, frag_c = ("warp", "warp", "warp")
    if not on_gpu:
        frag_a = frag_b = frag_c = "local"

    # ---------------------------------------------------------------- 4. global -> shared
    fetch = dict(k_loop=k0, scope=sh_scope, vec_max=int(c["vec"]), n_warps=n_warps, on_gpu=on_gpu,
                 smem_pad=int(c["smem_pad"]))
    a_g2s, vec_a = fetch_to_shared(sch, block_outer, 0, m_major=a_m_major, **fetch)
    b_g2s, vec_b = fetch_to_shared(sch, block_outer, 1, **fetch)

    # ---------------------------------------------------------------- 5. shared -> frags
    a_frag = sch.cache_read(block_outer, 0, frag_a)
    b_frag = sch.cache_read(block_outer, 1, frag_b)
    sch.compute_at(a_frag, k1)
    sch.compute_at(b_frag, k1)

    # ---------------------------------------------------------------- 6. accum -> shared -> epilogue
    acc_sh, acc, _, _ = stage_accumulators(sch, block_outer, ty, sh_scope, frag_c)
    # the output runs along M too (NCHW): stored M-fastest
    vec_out = store_epilogue(sch, acc_sh, epilogue_blocks, int(c["vec_out"]), WN, on_gpu, bool(c.get("c_m_major")),
                             target=target)

    init = sch.decompose_reduction(block_outer, k0)
    init_inner = sch.get_child_blocks(init)[0]

    # ---------------------------------------------------------------- 7. tensorize
    def split_tiles(blk_rv, tx, ty):
        x, y = sch.get_loops(blk_rv)[-2:]
        x0, x1 = sch.split(x, [None, tx])
        y0, y1 = sch.split(y, [None, ty])
        sch.reorder(x0, y0, x1, y1)
        return x0, y0, x1

    a0, a1, a_t = split_tiles(a_frag, 16, KT)
    b0, b1, b_t = split_tiles(b_frag, *((16, KT) if b_nk else (KT, 16)))
    if tensorize and intrin == "mma":
        # mma.sync fragments live in "warp" scope buffers laid out as [.., 32 lanes, 8 elems]
        # per 16x16 tile; the ldmatrix/mma/store intrinsics match that layout.
        lay = tvm_cuda_intrinsics().shared_16x16_to_ldmatrix_32x8_layout

        def warp_map(lay_, ti, tj):
            return lambda b_, i_, j_: (b_, i_ // ti, j_ // tj, *lay_(i_ % ti, j_ % tj))

        if KT == 16:
            a_map = b_map = warp_map(lay, 16, 16)
        elif KT == 32:  # int8: 16x32 A (and [n, k] B) tiles, 32x16 [k, n] B tiles, 16 bytes a lane
            lib = tvm_cuda_intrinsics()
            a_map = warp_map(lib.shared_16x32_to_ldmatrix_32x16_layout, 16, 32)
            b_map = (warp_map(lib.shared_16x32_to_ldmatrix_32x16_layout, 16, 32) if b_nk
                     else warp_map(lib.shared_32x16_to_ldmatrix_32x16_layout, 32, 16))
        else:  # tf32: 16x8 A tiles, 8x16 (or [n, k] 16x8) B tiles in the m16n8k8 fragment layout
            a_map = warp_map(lay_a, 16, 8)
            b_map = warp_map(lambda n, k: lay_b(k, n), 16, 8) if b_nk else warp_map(lay_b, 8, 16)
        sch.transform_layout(a_frag, ("write", 0), a_map)
        sch.transform_layout(b_frag, ("write", 0), b_map)
        sch.transform_layout(acc, ("read", 0), warp_map(lay, 16, 16))
    if tensorize:
        names = intrin_names(intrin, in_dtype, out_dtype, sh_scope, b_nk)
        sch.unroll(a0)
        sch.unroll(a1)
        sch.unroll(b0)
        sch.unroll(b1)
        sch.tensorize(a_t, names["load_a"])
        sch.tensorize(b_t, names["load_b"])
        sch.tensorize(sch.get_loops(init_inner)[-2], names["init"])
        tensorize_staging_store(sch, acc, names["store"])
        sch.tensorize(sch.get_loops(block_inner)[-3], names["compute"])

    # ---------------------------------------------------------------- 8. pipelining
    # NOTE: the inner (k1) pipeline is injected first and expands into
    # prologue/body/epilogue, so the outer annotation must cover 2 + 3 statements.
    frag_pipe = bool(c["frag_pipeline"]) and k_inner >= 2
    if frag_pipe:
        sch.annotate(k1, "software_pipeline_stage", [0, 0, 1])
        sch.annotate(k1, "software_pipeline_order", [0, 1, 2])
    if stages >= 2:
        n_body = 3 if frag_pipe else 1
        sch.annotate(k0, "software_pipeline_stage", [0, 0] + [stages - 1] * n_body)
        sch.annotate(k0, "software_pipeline_order", list(range(2 + n_body)))
        if on_gpu:
            sch.annotate(k0, "software_pipeline_async_stages", [0])

    return {"vec_a": vec_a, "vec_b": vec_b, "vec_out": vec_out, "b_nk": b_nk, "n_warps": n_warps}


def mma_fallback_values(m: int, n: int, sms: int) -> dict:
    """The untuned mma.sync config (see TensorCoreGemm.fallback)."""
    tile = (128, 128, 64, 64) if math.ceil(m / 128) * math.ceil(n / 128) >= sms else (64, 64, 32, 32)
    return {"tile": tile, "bk": 32, "stages": 3, "intrin": "mma", "vec_out": 4}
