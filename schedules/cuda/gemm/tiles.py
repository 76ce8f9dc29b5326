"""The tile machinery the tensor-core GEMM templates share (mma.sync/wmma in mma.py, Hopper's
wgmma in wgmma.py): how a block computing C[s, i, j] += A[s, i, k] * B[s, j, k] (any layout dlight's
iter-trait analysis recognises: a GEMM with B as (N,K) or (K,N), a conv as its implicit GEMM) has
its operands staged global -> shared (cp.async, every thread a share, producers computed in the
copy), its accumulators staged in shared memory, and its fused epilogue (bias, BN, activations,
residual, cast) computed from there and stored once.
"""
from __future__ import annotations

from typing import Optional

import tvm
from tvm import tirx
from tvm_ffi import structural_walk
from tvm.s_tir.schedule import ScheduleError
from tvm.s_tir.dlight.gpu.matmul import IterKind, auto_inline_producers

from ....ops.lowbit import DECODE_CALL, ENCODE_CALL
from ....target import device_caps
from ...gpu.lanes import (MAX_BOOL_LANES, MAX_FLOAT32_LANES, bool_lanes_vary, children as lane_children,
                          has_float32_constants, lanes_contiguous)
from ...registry import KernelInfo
from ..intrin.bf16 import bf16_mma_group
from ..intrin.int8 import int8_mma_group
from ..intrin.tf32 import tf32_mma_group
from ..intrin.tvm_library import tvm_cuda_intrinsics
from ..passes.chunk_guards import COPY_LANES

TC_DTYPES = ("float16", "bfloat16")  # what the tensor cores multiply (and tf32 float32)
MMA_INT_DTYPES = ("int8",)  # what mma.sync and wgmma multiply besides (int32 accumulation)
MIN_MN = 16  # one 16x16 fragment: below it the GEMM is a GEMV, and has no I or J axis to tile


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




def last_index_kind(block, read_idx, kinds_by_var):
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
    if IterKind.kIter_K in last_index_kind(blk, read_idx, kinds_by_var):
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
        return (lanes_contiguous(probe, rd, axes[pos], lanes)
                and not lanes_contiguous(probe, rd, axes[-1], lanes))
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
                exts.append(lanes_bound(r.source.shape[-1]))
    return exts


def drop_unit_iters(sch, block) -> None:
    """Re-express the block without its extent-1 iterators (bijective, so the schedule allows it)."""
    ivs = sch.get(block).iter_vars
    if not any(isinstance(iv.dom.extent, tirx.IntImm) and iv.dom.extent.value == 1 for iv in ivs):
        return
    keep = [k for k, iv in enumerate(ivs) if not (isinstance(iv.dom.extent, tirx.IntImm) and iv.dom.extent.value == 1)]
    dtype = str(ivs[0].var.ty)  # the block's index type (int32 unless the kernel's indices are 64-bit)
    sch.transform_block_layout(block, tirx.IndexMap.from_func(lambda *vs: [vs[k] for k in keep], ndim=len(ivs),
                                                              index_dtype=dtype))


def lanes_bound(extent) -> int:
    """What an innermost extent allows a vector width to divide: the extent itself where it is
    fixed; for a symbolic one (a sequence length S, S * 64) the factor it is known to have at
    every size (1 for S, 64 for S * 64), so that rows stay whole vectors whatever the size."""
    if isinstance(extent, (int, tirx.IntImm)):
        return int(extent)
    from tvm import sym

    known = sym.Analyzer().modular_set(extent)
    return int(known.coeff) if int(known.base) == 0 and int(known.coeff) > 0 else 1


def pick_vec(vmax, *exts):
    v = vmax
    while v > 1 and any(e % v for e in exts):
        v //= 2
    return max(v, 1)


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
    inner = lanes_bound(sch.get(blk_read).writes[0].source.shape[-1])
    vec = 1 if m_major else pick_vec(vec_max, inner, *exts)
    rows, cols = sch.get_loops(blk_read)[-2:]
    if m_major:
        sch.reorder(cols, rows)
    fused = sch.fuse(*sch.get_loops(blk_read)[-2:])
    while vec > 1 and not lanes_contiguous(sch, blk_read, fused, vec):
        vec //= 2
    if vec > MAX_BOOL_LANES and bool_lanes_vary(sch, blk_read, fused, vec):
        vec = MAX_BOOL_LANES
    _, f1, f2, f3 = sch.split(fused, [None, n_warps, 32, vec])
    if on_gpu:
        sch.bind(f2, "threadIdx.x")
        sch.bind(f1, "threadIdx.y")
    sch.vectorize(f3)
    if vec > 1:
        sch.annotate(blk_read, COPY_LANES, vec)  # its guards tested per chunk (passes/chunk_guards.py)
    if smem_pad:
        elem = tvm.DataType(sch.get(blk_read).writes[0].source.dtype).bits // 8
        sch.storage_align(blk_read, 0, axis=-2, factor=32, offset=row_pad(smem_pad, elem))
    return blk_read, vec


def row_pad(smem_pad: int, elem_bytes: int) -> int:
    """The storage_align offset (elements) of a shared operand tile's rows: `smem_pad`, raised to
    16 bytes' worth. ldmatrix reads 16-byte rows, so each row must start 16-byte aligned: 8 int8
    elements would leave every other row 8 bytes off (a misaligned-address fault)."""
    return max(smem_pad, 16 // elem_bytes) if smem_pad else 0


MAX_GRID_Y = 65535  # CUDA's limit on gridDim.y (and z); x takes 2^31 - 1


def m_tiles_first(m_tiles: Optional[int], n_tiles: Optional[int], k: Optional[int], bm: int, bn: int,
                  elem_bytes: int, l2_bytes: int) -> bool:
    """Whether a GEMM's grid should run down its M tiles before across its N tiles.

    CUDA starts blocks x fastest, so the blocks resident at once share the tiles of the slow
    axis and sweep those of the fast one. N fastest (the default) streams A once, and the whole
    of B is swept for each row of M tiles, which costs nothing while B stays in L2 (a layer's
    weights). A B past half the L2 (a vocabulary projection: GPT-2's 50257 x 768 head is 77 MB)
    is read from DRAM again for each row: at 4096 rows the head moved 2.9 GB (3.27 TB/s for
    0.88 ms under ncu, H200). Then, where A stays in half the L2 instead (the head's is 6 MB),
    M goes fastest: B streamed once, A swept from L2. Where both are past it, the order stays
    (unmeasured; a conv's A counted as its im2col rows overstates it anyway). M tiles past
    gridDim.y's limit go on x whatever the traffic (a conv's implicit GEMM at batch 512 has
    100,352 rows of 64 at 112x112; on y its launch is refused, check_limits). Extents not
    known at build time (a symbolic M) keep N fastest: such an M past 65535 tiles at run time
    fails at launch."""
    if m_tiles is None or n_tiles is None or k is None or n_tiles > MAX_GRID_Y:
        return False
    if m_tiles > MAX_GRID_Y:
        return True
    keep = l2_bytes // 2  # the other half streams the outputs and the swept operand
    a_bytes, b_bytes = m_tiles * bm * k * elem_bytes, n_tiles * bn * k * elem_bytes
    return m_tiles > 1 and b_bytes > keep and a_bytes <= keep


def bind_grid(sch, b, i0, j0, ty, m_first: bool = False) -> None:
    """Batch, M and N tiles on the grid (z, y, x), or M on x and N on y where `m_first`
    (m_tiles_first); the warps on threadIdx.y."""
    sch.bind(b, "blockIdx.z")
    sch.bind(i0, "blockIdx.x" if m_first else "blockIdx.y")
    sch.bind(j0, "blockIdx.y" if m_first else "blockIdx.x")
    sch.bind(ty, "threadIdx.y")


def grid_order(sch, i0, j0, k0, bm: int, bn: int, bk: int, elem_bytes: int, target) -> bool:
    """m_tiles_first for a tiled GEMM's loops: i0 over its M tiles of `bm` rows, j0 over its N
    tiles of `bn`, k0 over its K steps of `bk`."""
    def extent(loop):
        e = sch.get(loop).extent
        return int(e) if isinstance(e, tirx.IntImm) else None

    k_steps = extent(k0)
    return m_tiles_first(extent(i0), extent(j0), k_steps * bk if k_steps else None, bm, bn, elem_bytes,
                         device_caps(target).l2_bytes)


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


def aligned_row(n: int, offset: int) -> int:
    """Row stride (elements) of an n-wide tile under storage_align(factor=32, offset): the row
    rounded up to `offset` past a multiple of 32."""
    return n + (offset - n) % 32


def staging_row_stride(bn: int) -> int:
    """Row stride (elements) of a BN-wide staging tile (storage_align offset STAGING_PAD)."""
    return aligned_row(bn, STAGING_PAD)


def pipeline_smem_bytes(bm: int, bn: int, bk: int, stages: int, elem_bytes: int, b_rows_k: bool = False) -> int:
    """Shared memory of a pipelined mma.sync/wmma GEMM's operand tiles: `stages` copies of the A
    tile (BM rows of BK) and the B tile (BN rows of BK; BK rows of BN where B's rows run along
    K: an HWIO conv weight, a [K, N] Linear weight), each row padded by storage_align (factor
    32, offset smem_pad)."""
    pad = row_pad(DEFAULT_CFG["smem_pad"], elem_bytes)
    b = bk * aligned_row(bn, pad) if b_rows_k else bn * aligned_row(bk, pad)
    return max(stages, 1) * (bm * aligned_row(bk, pad) + b) * elem_bytes


def tensorize_staging_store(sch, acc, intrin: str) -> None:
    """Tensorize the fragments' store into the staging tile (`acc`'s 16x16 loops) and pad the
    tile's rows (STAGING_PAD) on the block that now writes it: tensorize replaces `acc`, and
    with it a storage_align set on it before."""
    store = sch.blockize(sch.get_loops(acc)[-2])
    sch.tensorize(store, intrin)
    sch.storage_align(store, 0, axis=-2, factor=32, offset=STAGING_PAD)


def store_epilogue(sch, acc_sh, epilogue_blocks, vec_max, width, on_gpu, m_major=False, target=None) -> int:
    """Fuse the epilogue (pad crop, reindex write-back, user blocks) into the staging tile's
    read and store it up to `vec_max` wide (scalar for an M-fastest NCHW output). Where the
    epilogue cannot be computed that wide (a ReLU's select: CUDA has no bool x8; erf, which TVM's
    vectorizer scalarizes together with the store), it is computed narrower into registers and
    stored from there at full width: a scalarized store writes 2 bytes a lane, at a quarter of
    the bandwidth. `target`: what its calls lower to (`scalarizing_calls`). Returns the store's
    vector width."""
    followers = inline_epilogue(sch, acc_sh, epilogue_blocks)
    out_exts = [lanes_bound(r.source.shape[-1]) for r in sch.get(acc_sh).writes]
    vec_out = 1 if m_major else pick_vec(vec_max, width, *out_exts)
    oi, oj = sch.get_loops(acc_sh)[-2:]
    if m_major:
        sch.reorder(oj, oi)
    lanes = computed_lanes(sch, acc_sh, oj, vec_out, target)  # how wide the epilogue is computed (along oj)
    if lanes < vec_out and _divides_by_a_dim(sch.get(acc_sh).writes):
        # an output whose rows split by a run-time size (a GEMM's N*S rows written to [N, S, H])
        # has no register stage: a cache of its indices (rows // S, rows % S) is a region TVM
        # cannot bound without knowing S > 0, so it would not compact to the thread's vector
        vec_out = lanes
    if lanes == vec_out:
        fused = sch.fuse(*sch.get_loops(acc_sh)[-2:])
        _, f1, f2 = sch.split(fused, [None, 32, vec_out])
        if on_gpu:
            sch.bind(f1, "threadIdx.x")
        sch.vectorize(f2)
        follow_outputs(sch, followers, f1, target)
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
    follow_outputs(sch, followers, f1, target)
    return vec_out


def _divides_by_a_dim(regions) -> bool:
    """Whether a region's indices divide by a run-time size (floordiv or floormod by a dim)."""
    found = []
    for r in regions:
        for rng in r.region:
            structural_walk(rng.min, ((tirx.FloorDiv, tirx.FloorMod),
                                      lambda e: None if isinstance(e.b, tirx.IntImm) else found.append(e)))
    return bool(found)


def follow_outputs(sch, followers: list[str], loop, target=None) -> None:
    """Compute each follower (an output computed from an output the epilogue stores: an int8
    QuantizeLinear of a residual block's fp16 output, fusion's quantized outputs) under the
    store's thread loop, from the values the thread has just stored (lowering gives the stored
    output a block of its own), a vector at a time where its loads stay whole vectors."""
    for name in followers:
        block = sch.get_sblock(name)
        sch.reverse_compute_at(block, loop)
        inner = sch.get_loops(block)[-1]
        width = int(sch.get(inner).extent)
        lanes = computed_lanes(sch, block, inner, width, target)
        if lanes == width:
            sch.vectorize(inner)
            continue
        store = sch.cache_write(block, 0, "local")  # computed narrower, stored whole
        sch.reverse_compute_at(store, loop)
        sch.vectorize(sch.get_loops(store)[-1])
        if lanes > 1:
            outer, inner = sch.split(inner, [None, lanes])
            sch.unroll(outer)
            sch.vectorize(inner)
        else:
            sch.unroll(inner)


# float8 conversions CUDA prints two or four lanes at once (cuda_fp8.h's __nv_fp8x2/x4 types);
# TVM's 8-lane float8 type is a plain struct with no conversion from float32x8
MAX_FLOAT8_LANES = 4


def computed_lanes(sch, block, loop, width: int, target=None) -> int:
    """How many lanes of `block`'s vector loop `loop` (`width` wide) it can be computed at once: 1
    with a call TVM's vectorizer scalarizes (`scalarizing_calls`); at most MAX_BOOL_LANES where
    a select's condition varies across lanes (CUDA has no bool x8), MAX_FLOAT32_LANES with
    float32 constants, MAX_FLOAT8_LANES with float8 conversions."""
    body = sch.get(block).body
    if width > 1 and scalarizing_calls(body, target):
        return 1
    lanes = width
    if lanes > MAX_BOOL_LANES and bool_lanes_vary(sch, block, loop, lanes):
        lanes = MAX_BOOL_LANES
    if lanes > MAX_FLOAT32_LANES and has_float32_constants(body):
        lanes = MAX_FLOAT32_LANES
    if lanes > MAX_FLOAT8_LANES and _calls(body, lambda c: _extern_call_of(c, (DECODE_CALL, ENCODE_CALL))):
        lanes = MAX_FLOAT8_LANES
    return lanes


def scalarizing_calls(body, target=None) -> bool:
    """Whether a block body calls an op TVM's vectorizer does not vectorize (erf, rsqrt,
    if_then_else: ops without the TVectorizable attribute); it then computes and stores the
    whole vector loop lane by lane. On a `target` that converts float8 in hardware, its
    conversion calls are not such ops: codegen/float8.py makes them float8 Casts before the
    vectorizer runs, which CUDA converts two or four lanes an instruction."""
    vector_externs = (DECODE_CALL, ENCODE_CALL) if target is not None and device_caps(target).has_float8_convert \
        else ()
    return _calls(body, lambda c: not c.op.get_attr("TVectorizable") and not _extern_call_of(c, vector_externs))


def _calls(body, which) -> bool:
    """Whether `body` (its lane-computing expressions) calls an op for which `which(call)` holds."""
    todo = [body]
    while todo:
        n = todo.pop()
        if isinstance(n, tvm.ir.Call) and isinstance(n.op, tvm.ir.Op) and which(n):
            return True
        todo.extend(lane_children(n))
    return False


def _extern_call_of(call, prefixes: tuple) -> bool:
    """Whether `call` is an extern call whose function name starts with one of `prefixes`."""
    return bool(prefixes) and call.op.name == "tirx.call_pure_extern" and bool(call.args) \
        and isinstance(call.args[0], tvm.ir.StringImm) and call.args[0].value.startswith(prefixes)


def inline_epilogue(sch, acc_sh, epilogue_blocks) -> list[str]:
    """reverse_compute_inline every consumer of the accumulator staging block (the
    pad_einsum crop block, the reindex write-back block, and the user epilogue blocks,
    in order) into it, so the epilogue runs on the warp tile straight out of the
    accumulator fragments. Returns the followers: epilogue output blocks that read an output
    the staging block now writes (which stays written, so they cannot be inlined:
    follow_outputs places them)."""
    followers: list[str] = []
    for _ in range(64):
        consumers = [c for c in sch.get_consumers(acc_sh) if sch.get(c).name_hint not in followers]
        if not consumers:
            return followers
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
            if not all(n in epilogue_blocks and _reads_stored(sch, x, acc_sh) for n, x in zip(names, consumers)):
                raise RuntimeError(f"could not fuse epilogue blocks {names} into the output tile")
            followers.extend(names)
    return followers


def _reads_stored(sch, block, producer) -> bool:
    """Whether `block` reads a global buffer `producer` writes: an output inlined into the
    staging block, which stays stored."""
    written = [w.source for w in sch.get(producer).writes if w.source.scope() == "global"]
    return any(r.source.same_as(b) for r in sch.get(block).reads for b in written)


def intrin_names(intrin, in_dtype, out_dtype, load_scope, b_nk) -> dict[str, str]:
    """The intrinsic names of one warp-level GEMM tile (load_a, load_b, init, compute, store),
    every one of them registered."""
    return tvm_cuda_intrinsics().ensure(_group(intrin, in_dtype, out_dtype, load_scope, b_nk))


def _group(intrin, in_dtype, out_dtype, load_scope, b_nk) -> dict[str, str]:
    if in_dtype == "float32":
        return tf32_mma_group(load_scope, b_nk)
    if intrin == "wmma":
        assert in_dtype == "float16", "TVM's registered wmma intrinsics are fp16/int8 only"
        return tvm_cuda_intrinsics().get_wmma_intrin_group(
            load_scope=load_scope, store_scope=load_scope, in_dtype=in_dtype,
            out_dtype=out_dtype, trans_b=b_nk)
    if in_dtype == "int8":
        if intrin != "mma" or out_dtype != "int32":
            raise ValueError(f"int8 operands go through mma.sync m16n8k32 into int32 only, not {intrin} -> {out_dtype}")
        return int8_mma_group(load_scope, load_scope, b_nk)
    get_mma_intrin_group = tvm_cuda_intrinsics().get_mma_intrin_group
    if in_dtype == "float16":
        return get_mma_intrin_group(
            load_scope=load_scope, store_scope=load_scope, in_dtype=in_dtype,
            out_dtype=out_dtype, trans_a=False, trans_b=b_nk)
    if in_dtype != "bfloat16" or out_dtype != "float32":
        raise ValueError(f"no mma intrinsics for {in_dtype} -> {out_dtype}")
    return bf16_mma_group(load_scope, load_scope, b_nk)


def tc_shape(info: KernelInfo) -> tuple[int, int, int]:
    """(M, N, K) of the GEMM the anchor computes (a conv's implicit GEMM; a split-K conv's
    slices count as M, as a batch does)."""
    g = info.geometry
    if info.anchor_kind == "conv2d":
        return g.split_k * g.m, g.k, g.r_split
    return g.batch * g.m, g.n, g.k
