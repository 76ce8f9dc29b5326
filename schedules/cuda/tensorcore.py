"""Tensor-core template (GPU family): dense, matmul, batched matmul and implicit-GEMM conv2d in
fp16/bf16 with float32 accumulation, on wmma or mma.sync + ldmatrix, and float32 ops built with
math='tf32' on mma.sync m16n8k8 (tensor_intrin_tf32.py).

`apply_tc_gemm` schedules a block computing C[s, i, j] += A[s, i, k] * B[s, j, k] (any layout
dlight's iter-trait analysis recognises: a GEMM with B as (N,K) or (K,N), a conv as its
implicit GEMM): operands are reindexed to that form, padded to the block tile (masked tails,
never CUDA cores), staged global -> shared (cp.async, multi-stage pipeline) -> fragments, and
the accumulators go through a per-warp shared tile from which the fused epilogue (bias, BN,
activations, residual, cast) is computed and written once.
"""
from __future__ import annotations

import math

import tvm
from tvm.s_tir.schedule import ScheduleError
from tvm import tirx
from tvm.s_tir.dlight.gpu.matmul import (
    IterKind,
    auto_inline_producers,
    detect_iter_traits,
    make_iter_fusion_index_map,
)

from ...target import gpu_limits
from ..common import target_kind as _target_kind  # (tc._target_kind: the attention and wgmma templates use it)
from ..registry import DOMINANT, TIR_PIPELINE, KernelInfo, Template, register
from ..space import Config, ConfigSpace
from .hoist import PIPELINE as HOIST_PIPELINE
from .lanes import MAX_BOOL_LANES, bool_lanes_vary as _bool_lanes_vary, children as _lane_children
from .lanes import lanes_contiguous as _lanes_contiguous
from .sliced_k import SLICED, slice_reduction
from .tensor_intrin_bf16 import bf16_mma_group
from .tensor_intrin_tf32 import tf32_mma_group

DEFAULT_CFG = dict(
    intrin="wmma",  # "wmma" | "mma"
    in_dtype=None,  # auto from A ("float16" | "bfloat16" | "float32" (tf32, mma only))
    BM=128,
    BN=128,
    BK=32,
    WM=64,
    WN=64,
    stages=3,  # >=2: software pipeline with cp.async (shared-memory multi-buffering)
    vec=8,  # max vector width (elements) of global->shared loads (auto-reduced for alignment)
    vec_out=4,  # max vector width of the epilogue global stores (auto-reduced)
    smem_pad=8,  # storage_align offset (elements) of the shared A/B tiles (bank conflicts)
    frag_pipeline=True,  # double-buffer the shared->fragment loads inside the BK loop
    tensorize=True,  # False: identical tiling/padding but plain loops (for CPU numerics)
)




def _last_index_kind(block, read_idx, kinds_by_var):
    """Kind (I/J/K) of the vars used in the innermost index of a read buffer."""
    region = block.reads[read_idx].region
    from tvm.tirx.analysis import undefined_vars

    for r in reversed(region):
        vs = [v for v in undefined_vars(r.min) if v in kinds_by_var]
        ks = {kinds_by_var[v] for v in vs if kinds_by_var[v] != IterKind.kIter_T}
        if ks:
            return ks
    return set()


def _k_axis(block, read_idx, kinds_by_var):
    """Which axis of the read buffer the GEMM's K iterator indexes, else None."""
    from tvm.tirx.analysis import undefined_vars

    for pos, r in enumerate(block.reads[read_idx].region):
        if any(kinds_by_var.get(v) == IterKind.kIter_K for v in undefined_vars(r.min)):
            return pos
    return None


def operand_k_major(sch, block_rv, read_idx, kinds_by_var, lanes: int = 8) -> bool:
    """Whether operand `read_idx` is stored K fastest: its buffer's last index is K, or, read
    through its inlined prologue, the global data it comes from runs along K and not along its
    buffer's last axis. Attention's K^T is the second case: a transpose of [.., N, K] data. Read
    as (K, N), its tile copy would gather one element per row; staged [N, K] it streams 16
    bytes a thread. Judged on a copy of the schedule (cache_read + inlining, then the lanes of
    the K loop evaluated), which is thrown away."""
    blk = sch.get(block_rv)
    if IterKind.kIter_K in _last_index_kind(blk, read_idx, kinds_by_var):
        return True
    pos = _k_axis(blk, read_idx, kinds_by_var)
    if pos is None:
        return False
    probe = sch.copy()
    try:
        rd = probe.cache_read(block_rv, read_idx, "global")
        auto_inline_producers(probe, rd)
        loops = probe.get_loops(rd)
        ndim = len(blk.reads[read_idx].region)
        if len(loops) < ndim:
            return False
        axes = loops[len(loops) - ndim:]
        return (_lanes_contiguous(probe, rd, axes[pos], lanes)
                and not _lanes_contiguous(probe, rd, axes[-1], lanes))
    except ScheduleError:
        return False


def _global_last_dim(sch, block_rv):
    """Innermost extents of the global buffers block_rv reads (after inlining) along its
    innermost iterator: those bound the copy's vector width. A read that does not move with
    that iterator (a LayerNorm prologue's per-row mean and rstd) is one value per vector."""
    from tvm.tirx.analysis import undefined_vars

    blk = sch.get(block_rv)
    last = blk.iter_vars[-1].var
    exts = []
    for r in blk.reads:
        if r.source.scope() == "global":
            if any(v.same_as(last) for rg in r.region for v in undefined_vars(rg.min)):
                exts.append(int(r.source.shape[-1]))
    return exts


def _drop_unit_iters(sch, block) -> None:
    """Re-express the block without its extent-1 iterators (bijective, so the schedule allows it)."""
    ivs = sch.get(block).iter_vars
    if not any(isinstance(iv.dom.extent, tirx.IntImm) and iv.dom.extent.value == 1 for iv in ivs):
        return
    keep = [k for k, iv in enumerate(ivs) if not (isinstance(iv.dom.extent, tirx.IntImm) and iv.dom.extent.value == 1)]
    sch.transform_block_layout(block, tirx.IndexMap.from_func(lambda *vs: [vs[k] for k in keep], ndim=len(ivs)))


def _pick_vec(vmax, *exts):
    v = vmax
    while v > 1 and any(e % v for e in exts):
        v //= 2
    return max(v, 1)


def apply_tc_gemm(sch, gemm_block, epilogue_blocks, cfg, target) -> dict:
    if (cfg or {}).get("intrin") == "wgmma":  # Hopper: its own warp tiling and shared layout
        from .tensorcore_wgmma import apply_wgmma_gemm

        return apply_wgmma_gemm(sch, gemm_block, epilogue_blocks, cfg, target)
    c = dict(DEFAULT_CFG)
    c.update(cfg or {})
    kind = _target_kind(target)
    on_gpu = kind == "cuda"
    tensorize = bool(c["tensorize"]) and on_gpu
    intrin = c["intrin"]
    BM, BN, BK, WM, WN = (int(c[k]) for k in ("BM", "BN", "BK", "WM", "WN"))
    assert BM % WM == 0 and BN % WN == 0, "block tile must be a multiple of the warp tile"
    assert WM % 16 == 0 and WN % 16 == 0 and BK % 16 == 0, "tiles must be multiples of 16"
    warps_m, warps_n = BM // WM, BN // WN
    n_warps = warps_m * warps_n
    stages = int(c["stages"])

    block = sch.get_sblock(gemm_block)
    _drop_unit_iters(sch, block)  # a 1x1 conv's ry, rx and a batch of 1: reindex cannot take them
    blk = sch.get(block)
    in_dtype = c["in_dtype"] or blk.reads[0].source.dtype
    out_dtype = blk.writes[0].source.dtype
    if in_dtype == "float32" and intrin != "mma":
        raise ValueError("float32 operands (tf32) go through mma.sync m16n8k8 only")
    KT = 8 if in_dtype == "float32" else 16  # the fragments' K: tf32 is m16n8k8
    if in_dtype == "float32":
        c["vec"] = min(int(c["vec"]), 4)  # cp.async moves at most 16 bytes
    frag_m, frag_n, k_inner = WM // 16, WN // 16, BK // KT

    # ---------------------------------------------------------------- 1. normalize
    traits = detect_iter_traits(blk)
    assert traits is not None, f"{gemm_block} is not a GEMM-like block"
    A_tr, B_tr, C_tr, blk_tr = traits
    kinds_by_var = {iv.var: t.kind for iv, t in zip(blk.iter_vars, blk_tr)}
    a_last = _last_index_kind(blk, 0, kinds_by_var)
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
        bind_grid(sch, b, i0, j0, ty)

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
    vec_out = store_epilogue(sch, acc_sh, epilogue_blocks, int(c["vec_out"]), WN, on_gpu, bool(c.get("c_m_major")))

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
        from tvm.s_tir.tensor_intrin.cuda import shared_16x16_to_ldmatrix_32x8_layout as lay

        def warp_map(lay_, ti, tj):
            return lambda b_, i_, j_: (b_, i_ // ti, j_ // tj, *lay_(i_ % ti, j_ % tj))

        if KT == 16:
            a_map = b_map = warp_map(lay, 16, 16)
        else:  # tf32: 16x8 A tiles, 8x16 (or [n, k] 16x8) B tiles in the m16n8k8 fragment layout
            from .tensor_intrin_tf32 import lay_a, lay_b

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


def fetch_to_shared(sch, block_outer, idx: int, *, k_loop, scope: str, vec_max: int, n_warps: int,
                    on_gpu: bool, m_major: bool = False, smem_pad: int = 0) -> tuple:
    """Stage operand `idx` of the warp product `block_outer` in `scope` once per K step
    (`k_loop`), every thread of the block copying a share, `vec_max` elements at a time where the
    source's lanes are contiguous (narrower where not, or where a ReLU prologue's select would need
    a bool x8, which CUDA lacks); its producers (pad, casts, layout changes) are computed in the
    copy. An M-fastest operand (NCHW data) is copied M-fastest, an element a thread, so a warp's
    loads coalesce. Returns the copy block and its vector width."""
    blk_read = sch.cache_read(block_outer, idx, scope)
    sch.compute_at(blk_read, k_loop)
    auto_inline_producers(sch, blk_read)
    exts = _global_last_dim(sch, blk_read)
    inner = int(sch.get(blk_read).writes[0].source.shape[-1])
    vec = 1 if m_major else _pick_vec(vec_max, inner, *exts)
    rows, cols = sch.get_loops(blk_read)[-2:]
    if m_major:
        sch.reorder(cols, rows)
    fused = sch.fuse(*sch.get_loops(blk_read)[-2:])
    while vec > 1 and not _lanes_contiguous(sch, blk_read, fused, vec):
        vec //= 2
    if vec > MAX_BOOL_LANES and _bool_lanes_vary(sch, blk_read, fused, vec):
        vec = MAX_BOOL_LANES
    _, f1, f2, f3 = sch.split(fused, [None, n_warps, 32, vec])
    if on_gpu:
        sch.bind(f2, "threadIdx.x")
        sch.bind(f1, "threadIdx.y")
    sch.vectorize(f3)
    if smem_pad:
        sch.storage_align(blk_read, 0, axis=-2, factor=32, offset=smem_pad)
    return blk_read, vec


def bind_grid(sch, b, i0, j0, ty) -> None:
    """Batch, M and N tiles on the grid (z, y, x); the warps on threadIdx.y."""
    sch.bind(b, "blockIdx.z")
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    sch.bind(ty, "threadIdx.y")


def stage_accumulators(sch, block_outer, ty, sh_scope, frag_c, place_staging=True):
    """The accumulators' two stages at the warp's loop `ty`: the per-warp fragments (`frag_c`,
    in 16x16 tiles) and the staging tile in shared memory that the epilogue reads (its rows
    padded by `tensorize_staging_store`; float32 here, made 16-bit for fp16/bf16 results after the
    schedule by narrow_staging.py). Returns the staging block,
    the fragment block and its two tile loops."""
    acc_sh = sch.cache_write(block_outer, 0, sh_scope)
    acc = sch.cache_write(block_outer, 0, frag_c)
    sch.reverse_compute_at(acc, ty)
    if place_staging:  # else the caller places the staging tile's readers (sliced_k.stage_sum)
        sch.reverse_compute_at(acc_sh, ty)
    ai, aj = sch.get_loops(acc)[-2:]
    ai0, ai1 = sch.split(ai, [None, 16])
    aj0, aj1 = sch.split(aj, [None, 16])
    sch.reorder(ai0, aj0, ai1, aj1)
    return acc_sh, acc, ai0, aj0


# float32 elements added to each row of the accumulators' staging tile. The fragment stores write
# 8-byte pairs (columns 2t, 2t+1 of rows lane/4 and lane/4 + 8), served half a warp at a time:
# rows r..r+3 x four pairs. With rows 8 words apart modulo the 32 banks they fall on 32 different
# banks; unpadded (BN a multiple of 32 words) the four rows share 8 banks, a 4-way conflict on
# every accumulator store (the memory-bound 1x1 convs at batch 16 spend their epilogue there)
STAGING_PAD = 8


def staging_row_stride(bn: int) -> int:
    """Row stride (elements) of a BN-wide staging tile: storage_align(factor=32, offset=STAGING_PAD)
    rounds the row up to STAGING_PAD past a multiple of 32."""
    return bn + (STAGING_PAD - bn) % 32


def tensorize_staging_store(sch, acc, intrin: str) -> None:
    """Tensorize the fragments' store into the staging tile (`acc`'s 16x16 loops) and pad the
    tile's rows (STAGING_PAD) on the block that now writes it: tensorize replaces `acc`, and
    with it a storage_align set on it before."""
    store = sch.blockize(sch.get_loops(acc)[-2])
    sch.tensorize(store, intrin)
    sch.storage_align(store, 0, axis=-2, factor=32, offset=STAGING_PAD)


def store_epilogue(sch, acc_sh, epilogue_blocks, vec_max, width, on_gpu, m_major=False) -> int:
    """Fuse the epilogue (pad crop, reindex write-back, user blocks) into the staging tile's
    read and store it up to `vec_max` wide (scalar for an M-fastest NCHW output). Where the
    epilogue cannot be computed that wide (a ReLU's select: CUDA has no bool x8; erf, which TVM's
    vectorizer scalarizes together with the store), it is computed narrower into registers and
    stored from there at full width: a scalarized store writes 2 bytes a lane, at a quarter of
    the bandwidth. Returns the store's vector width."""
    _inline_epilogue(sch, acc_sh, epilogue_blocks)
    out_exts = [int(r.source.shape[-1]) for r in sch.get(acc_sh).writes]
    vec_out = 1 if m_major else _pick_vec(vec_max, width, *out_exts)
    oi, oj = sch.get_loops(acc_sh)[-2:]
    if m_major:
        sch.reorder(oj, oi)
    lanes = vec_out  # how wide the epilogue is computed (the vectors run along oj)
    if lanes > 1 and scalarizing_calls(sch.get(acc_sh).body):
        lanes = 1
    elif lanes > MAX_BOOL_LANES and _bool_lanes_vary(sch, acc_sh, oj, lanes):
        lanes = MAX_BOOL_LANES
    if lanes == vec_out:
        fused = sch.fuse(*sch.get_loops(acc_sh)[-2:])
        _, f1, f2 = sch.split(fused, [None, 32, vec_out])
        if on_gpu:
            sch.bind(f1, "threadIdx.x")
        sch.vectorize(f2)
        return vec_out
    oj0, vec = sch.split(oj, [None, vec_out])
    _, f1 = sch.split(sch.fuse(oi, oj0), [None, 32])
    if on_gpu:
        sch.bind(f1, "threadIdx.x")
    for w in range(len(sch.get(acc_sh).writes)):  # the stores: registers -> global, full width
        store = sch.cache_write(acc_sh, w, "local")
        sch.reverse_compute_at(store, f1)
        sch.vectorize(sch.get_loops(store)[-1])
    if lanes > 1:  # unrolled, so that no column index depends on a loop (hoist.py)
        outer, inner = sch.split(vec, [None, lanes])
        sch.unroll(outer)
        sch.vectorize(inner)
    else:
        sch.unroll(vec)
    return vec_out


def scalarizing_calls(body) -> bool:
    """Whether a block body calls an op TVM's vectorizer does not vectorize (erf, rsqrt,
    if_then_else: ops without the TVectorizable attribute); it then computes and stores the
    whole vector loop lane by lane."""
    todo = [body]
    while todo:
        n = todo.pop()
        if isinstance(n, tvm.ir.Call) and isinstance(n.op, tvm.ir.Op) and not n.op.get_attr("TVectorizable"):
            return True
        todo.extend(_lane_children(n))
    return False


def _inline_epilogue(sch, acc_sh, epilogue_blocks):
    """reverse_compute_inline every consumer of the accumulator staging block (the
    pad_einsum crop block, the reindex write-back block, and the user epilogue blocks,
    in order) into it, so the epilogue runs on the warp tile straight out of the
    accumulator fragments."""
    for _ in range(64):
        consumers = sch.get_consumers(acc_sh)
        if not consumers:
            return
        progressed = False
        for cons in consumers:
            try:
                sch.reverse_compute_inline(cons)
                progressed = True
                break
            except ScheduleError:
                continue
        if not progressed:
            names = [sch.get(x).name_hint for x in consumers]
            raise RuntimeError(f"could not fuse epilogue blocks {names} into the output tile")


def intrin_names(intrin, in_dtype, out_dtype, load_scope, b_nk):
    if in_dtype == "float32":
        return tf32_mma_group(load_scope, b_nk)
    if intrin == "wmma":
        from tvm.s_tir.tensor_intrin.cuda import get_wmma_intrin_group

        assert in_dtype == "float16", "TVM's registered wmma intrinsics are fp16/int8 only"
        return get_wmma_intrin_group(
            load_scope=load_scope, store_scope=load_scope, in_dtype=in_dtype,
            out_dtype=out_dtype, trans_b=b_nk)
    from tvm.s_tir.tensor_intrin.cuda import get_mma_intrin_group

    if in_dtype == "float16":
        return get_mma_intrin_group(
            load_scope=load_scope, store_scope=load_scope, in_dtype=in_dtype,
            out_dtype=out_dtype, trans_a=False, trans_b=b_nk)
    if in_dtype != "bfloat16" or out_dtype != "float32":
        raise ValueError(f"no mma intrinsics for {in_dtype} -> {out_dtype}")
    return bf16_mma_group(load_scope, load_scope, b_nk)


def pass_config(intrin: str, target, slices: int = 1) -> dict:
    """PassContext options the schedule needs: cp.async is emitted only with
    `tirx.use_async_copy`; for wmma, StorageRewrite may alias the fp32 staging tile into an fp16
    one ("tvm_access_ptr element type must match"), so it is off (MergeSharedMemoryAllocations
    still reuses shared memory); mma needs it on (LowerWarpMemory); wgmma needs TIR's CSE off.
    CUDA kernels compile with hoist.py's pipeline (loop-invariant epilogue math)."""
    cfg = {"tirx.use_async_copy": True}
    if _target_kind(target) == "cuda":  # per-channel epilogue math once a thread, not once an element
        cfg[TIR_PIPELINE] = HOIST_PIPELINE
    if _target_kind(target) == "cuda" and intrin == "wmma":
        cfg["tirx.disable_storage_rewrite"] = True
    if _target_kind(target) == "cuda" and intrin == "wgmma":
        from .tma_mainloop import cluster_from_env
        from .wgmma_pipeline import PIPELINE as LATE_PIPELINE

        # CSE would bind the accumulators' `threadIdx.x * 8` to a let variable before
        # LowerWarpMemory, which then cannot tell that the wgmma call's &acc[...] is this lane's
        cfg["tirx.disable_cse_tir"] = True
        if cluster_from_env() is not None or slices > 1:  # the TMA mainloop's or cluster_sum's lowering
            cfg[TIR_PIPELINE] = LATE_PIPELINE
    return cfg


TC_DTYPES = ("float16", "bfloat16")
# block tile (BM, BN) and warp tile (WM, WN): warps = (BM/WM) * (BN/WN), 2 to 8 of them
TILES = [(128, 128, 64, 64), (128, 128, 64, 32), (128, 64, 64, 32), (64, 128, 32, 64), (128, 64, 32, 32),
         (64, 64, 32, 32), (64, 64, 64, 32), (128, 256, 64, 64), (256, 128, 64, 64),
         (192, 192, 64, 64), (128, 192, 64, 64), (192, 128, 64, 64)]
# block tiles of 192 rows or columns: wgmma only (2 or 3 warpgroups of 16-row warp strips, whole
# 16-column fragments); in mma's warp grid they would be 6 or 9 warps. (256x192 never fits Hopper's
# shared memory with its staging tile: tensorcore_wgmma.wgmma_shared_bytes.) Why 192: M = 6304
# (ViT-B/16 at batch 32) is 33 such rows, and 33 x 4 = 132 blocks fill the H100's SMs exactly,
# where 128-row tiles leave a partial wave (cuBLAS's nvjet takes 192x192 there)
WGMMA_ONLY_TILES = frozenset(t for t in TILES if 192 in t[:2])
MIN_ARCH = {"wmma": 70, "mma": 80}
MIN_MN = 16  # one 16x16 fragment: below it the GEMM is a GEMV, and has no I or J axis to tile


def _tf32(info: KernelInfo) -> bool:
    """A float32 matrix product built with math='tf32' (operands rounded to TF32 by the op)."""
    return info.dtype == "float32" and info.attrs.get("math") == "tf32"


def _intrins(info: KernelInfo, target=None) -> list[str]:
    """Instruction families for the operands' type, preferred first: TVM's CUDA codegen has no
    float32 wmma fragments, so tf32 is mma.sync (or wgmma) only. Hopper's wgmma (compute
    capability 9.0 targets; records hold knob values, so appending it keeps theirs valid) comes
    last; it takes fp16/bf16/tf32 GEMMs with B stored (N, K) (a dense's weights, an NHWC conv's
    OHWI weights; the untuned choice for them, see `fallback`), others fail to apply."""
    out = ["mma", "wmma"] if info.dtype == "float16" else ["mma"]
    if target is not None and (info.dtype in TC_DTYPES or _tf32(info)) and (
            info.anchor_kind == "dense" or getattr(info.geometry, "b_nk", False)):
        from .tensorcore_wgmma import wgmma_capable

        if wgmma_capable(target):
            out.append("wgmma")
    return out


def _arch(target) -> int:
    arch = str(target.attrs.get("arch", "sm_90")) if not isinstance(target, str) else "sm_90"
    digits = "".join(ch for ch in arch if ch.isdigit())
    return int(digits or 90)


def mma_capable(target) -> bool:
    """Whether the target runs this template's mma.sync path (CUDA, sm_80 and later)."""
    return _target_kind(target) == "cuda" and _arch(target) >= MIN_ARCH["mma"]


def tc_shape(info: KernelInfo) -> tuple[int, int, int]:
    """(M, N, K) of the GEMM the anchor computes (a conv's implicit GEMM; a split-K conv's
    slices count as M, as a batch does)."""
    g = info.geometry
    if info.anchor_kind == "conv2d":
        return g.split_k * g.m, g.k, g.r_split
    return g.batch * g.m, g.n, g.k


def mma_fallback_values(m: int, n: int, sms: int) -> dict:
    """The untuned mma.sync config (see TensorCoreGemm.fallback)."""
    tile = (128, 128, 64, 64) if math.ceil(m / 128) * math.ceil(n / 128) >= sms else (64, 64, 32, 32)
    return {"tile": tile, "bk": 32, "stages": 3, "intrin": "mma", "vec_out": 4}


def _slices(cfg: Config) -> int:
    return int(cfg.values.get("slices", 1))


# block tiles the slices' sum splits over the CTAs' warps (sliced_k.stage_sum), the sizes measured
SLICED_TILES = ((64, 64), (64, 128), (128, 128))


def _sliceable(info: KernelInfo, slices: int, tile=None) -> bool:
    """Whether the cluster split (sliced_k.py, cluster_sum.py) can take this kernel's reduction:
    its innermost axis (a conv's input channels, a dense's K) in whole 16-byte vectors a slice and
    two k steps a slice at least, a GEMM without a batch axis (the slices take its place),
    channels-last (the sum is computed over the output's (M, N) view); with `tile`, one of
    SLICED_TILES with a whole tile of rows and whole tiles of columns."""
    g = info.geometry
    if info.anchor_kind == "conv2d" and (g.layout != "NHWC" or g.split_k != 1):
        return False
    if info.anchor_kind == "dense" and getattr(g, "batch", 1) not in (1, None):
        return False
    m, n, k = tc_shape(info)
    if tile is not None and (tuple(tile[:2]) not in SLICED_TILES or m < tile[0] or n % tile[1]):
        return False
    return _channels(info) % (8 * slices) == 0 and k // slices >= 128


def _channels(info: KernelInfo) -> int:
    """The extent of the reduction's innermost axis: what the cluster split divides."""
    return info.geometry.c if info.anchor_kind == "conv2d" else tc_shape(info)[2]


@register("cuda", "dense", "conv2d")  # mma.sync / wmma PTX: CUDA only (ROCm has its MFMA templates)
class TensorCoreGemm(Template):
    """Tensor cores for fp16/bf16 GEMMs and non-grouped convs; for those it is the untuned
    choice too (CUDA-core templates compute fp16 at a fraction of the rate)."""

    name = "tensorcore_gemm"

    def accepts(self, info: KernelInfo) -> bool:
        if info.geometry is None or info.stage("accumulator") is None:
            return False
        if info.dtype not in TC_DTYPES and not _tf32(info):
            return False
        if info.anchor_kind not in ("conv2d", "dense") or getattr(info.geometry, "groups", 1) != 1:
            return False
        m, n, _ = tc_shape(info)
        return m >= MIN_MN and n >= MIN_MN  # a GEMV (ViT's classifier at batch 1) is CUDA cores' work

    def preference(self, info: KernelInfo, target) -> int:
        return DOMINANT if _arch(target) >= MIN_ARCH["mma"] else -10

    def space(self, info: KernelInfo, target) -> ConfigSpace:
        s = ConfigSpace()
        s.define_knob("tile", list(TILES))
        s.define_knob("bk", [32, 64])
        s.define_knob("stages", [3, 2, 4, 1, 6, 8])  # 6, 8: deep prefetch for deep, small grids (session 24)
        intrins = _intrins(info, target)
        s.define_knob("intrin", intrins)
        s.define_knob("vec_out", [4, 8])
        # the CTAs of a cluster sharing an output tile's reduction (cluster_sum.py; wgmma only),
        # implied 1 in the records from before it
        s.define_knob("slices", [1, 2, 4], implied_first=True)
        s.constrain(lambda v: v["intrin"] == "wgmma" or tuple(v["tile"]) not in WGMMA_ONLY_TILES)
        s.constrain(lambda v: v["slices"] == 1 or (v["intrin"] == "wgmma" and _sliceable(info, v["slices"], v["tile"])
                                                   and v["vec_out"] == 4))  # (the sum stores 4 wide at most)
        if "wgmma" in intrins:
            from .tensorcore_wgmma import wgmma_admits

            s.constrain(lambda v: wgmma_admits(v, info.dtype, TILES))
        return s

    def fallback(self, info: KernelInfo, target, space: ConfigSpace) -> Config:
        """128x128 blocks of 2x2 warps (64x64 warp tiles) for big GEMMs; 64x64 blocks when
        128x128 would leave most of the GPU idle (M or N small, ResNet's 7x7 layers at batch 1)."""
        m, n, k = tc_shape(info)
        sms = gpu_limits(target).sm_count
        if "wgmma" in _intrins(info, target) and getattr(info.geometry, "b_nk", False):
            from .tensorcore_wgmma import fallback_values

            sliceable = info.anchor_kind == "conv2d" and _sliceable(info, 2)  # (graph/split_k.cluster_split)
            values = fallback_values(m, n, sms, info.dtype, k, _channels(info) if sliceable else None)
            return space.from_values(values)
        return space.from_values({**mma_fallback_values(m, n, sms), "intrin": _intrins(info)[0]})

    def fallback_alternatives(self, info: KernelInfo, target, space: ConfigSpace, cfg: Config):
        """A cluster split the sum's schedule refuses (an epilogue it cannot compute 4 wide): the
        same config unsliced."""
        if _slices(cfg) > 1:
            yield space.from_values({**cfg.values, "slices": 1})

    def apply(self, sch, info: KernelInfo, cfg: Config, target) -> None:
        # prologues (pad, casts, layout changes) stay blocks here: the global -> shared copies
        # inline them (dlight's auto_inline_producers), so they are computed while loading tiles
        bm, bn, wm, wn = cfg["tile"]
        m, n, _ = tc_shape(info)
        # a masked (padded) tail stored 8 wide needs a bool x8 predicate, which CUDA codegen lacks
        vec_out = min(cfg["vec_out"], 4) if m % bm or n % bn else cfg["vec_out"]
        nchw = info.anchor_kind == "conv2d" and info.geometry.layout == "NCHW"
        gemm, epilogue, slices = info.stage("accumulator"), info.epilogue, _slices(cfg)
        if slices > 1:  # prepare() split the accumulator block (sliced_k.slice_reduction)
            gemm, epilogue = gemm + SLICED, [gemm, *epilogue]
        apply_tc_gemm(sch, gemm, epilogue,
                      dict(BM=bm, BN=bn, WM=wm, WN=wn, BK=cfg["bk"], stages=cfg["stages"], intrin=cfg["intrin"],
                           vec_out=vec_out, tensorize=_target_kind(target) == "cuda",
                           a_m_major=nchw, c_m_major=nchw, slices=slices), target)

    def finish(self, mod, info: KernelInfo, cfg: Config, target):
        from .clamp_rows import clamp_rows, predicated_rows_from_env
        from .narrow_staging import narrow_staging, wide_staging_from_env

        steps = [] if predicated_rows_from_env() else [clamp_rows]  # (on llvm too: same numbers)
        if _target_kind(target) == "cuda" and not wide_staging_from_env():
            steps.append(narrow_staging)
        out = mod.clone()
        for gv, f in mod.functions_items():
            if isinstance(f, tirx.PrimFunc):
                for step in steps:
                    f = step(f)
                out.update_func(gv, f)
        return out

    def prepare(self, func, info: KernelInfo, cfg: Config, target):
        if _slices(cfg) > 1:
            func = slice_reduction(func, info.stage("accumulator"), _slices(cfg))
        if cfg["intrin"] == "wgmma" and _tf32(info):
            from .tensorcore_wgmma import defer_tf32_rounding

            return defer_tf32_rounding(func)
        return func

    def compile_target(self, info: KernelInfo, cfg: Config, target):
        if cfg["intrin"] == "wgmma":
            from .tensorcore_wgmma import wgmma_target

            return wgmma_target(target)
        return target

    def pass_config(self, info: KernelInfo, cfg: Config, target) -> dict:
        return pass_config(cfg["intrin"], target, _slices(cfg))

    def preload(self) -> None:
        # TVM's CUDA tensor intrinsics: importing the module parses ~100 TVMScript functions (20-40 s)
        import tvm.s_tir.tensor_intrin.cuda  # noqa: F401

        from .tensor_intrin_bf16 import register

        register()
