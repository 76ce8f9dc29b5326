"""CUDA tensor-core template for the fused attention op (ops/attention.py), fp16 on wmma.

One thread block per (batch entry, tile of 16 * warps query rows); warp w owns 16 rows:
1. the block's q rows and all of k and v are copied to shared memory (their prologues, a
   transformer's head split, computed in the copy; padding rows zero);
2. each warp multiplies its q rows by k^T on tensor cores into a float32 score tile in shared
   memory (16 x Lk_pad);
3. a warp per 16 rows takes each row's max and exp-sum across its lanes, and writes the
   probabilities in fp16 (zeros past Lk), as the unfused softmax does;
4. each warp multiplies its probability rows by v on tensor cores, and its 16 x Dv result goes
   out through a float32 tile in shared memory, cast, with the epilogue (the head merge's
   transpose) computed in the store.
The scores never leave the chip, which is the point (graph/attention.py). The whole key length
sits in shared memory, so the template takes sequences whose tiles fit the arch's opt-in shared
memory (ViT's 197 tokens: about 90 KB a block once TVM reuses dead buffers); longer ones keep
the unfused kernels.
"""
from __future__ import annotations

from tvm.s_tir.dlight.gpu.matmul import auto_inline_producers

from ...ops.attention import BLOCKS, KEY_TILE, AttentionGeometry
from ...target import device_caps, optin_target
from ..registry import KernelInfo, Template, register
from ..space import Config, ConfigSpace
from ..gpu.lanes import MAX_BOOL_LANES, bool_lanes_vary, lanes_contiguous, stores_contiguous
from .intrin.tvm_library import tvm_cuda_intrinsics
from .gemm.tiles import inline_epilogue

SCOPE = "shared.dyn"
PAD_HALF = 8  # storage_align offsets: fp16 rows padded by 16 bytes, float32 rows by 16 bytes
PAD_FLOAT = 4
STATIC_SMEM = 48 * 1024
MAX_HEAD_DIM = 64  # see TensorCoreAttention.supports
WARPS = (4, 2)  # warps a block (16 query rows each); the op pads q rows to a multiple of 64


def padded_row(n: int, offset: int) -> int:
    """The row stride TVM gives a tile of rows of `n` elements under storage_align(factor=32,
    offset): the smallest stride >= n that is `offset` past a multiple of 32 (64 -> 72, 48 -> 72)."""
    return n + (offset - n) % 32


def _tiles(geo: AttentionGeometry, warps: int) -> dict:
    """Bytes of each shared tile of a block (rows padded as the schedule pads them)."""
    rows, lk = 16 * warps, geo.lk_pad
    half, flt = (lambda n: padded_row(n, PAD_HALF)), (lambda n: padded_row(n, PAD_FLOAT))
    return dict(q=2 * rows * half(geo.d), k=2 * lk * half(geo.d), v=2 * lk * half(geo.dv),
                scores=4 * rows * flt(lk), ctx=4 * rows * flt(geo.dv),
                probs=2 * rows * half(lk), stats=4 * 2 * rows)


def shared_bytes(geo: AttentionGeometry, warps: int) -> int:
    """Every shared buffer of a block at once (an upper bound: TVM's allocator reuses the q/k
    tiles and the scores once dead)."""
    return sum(_tiles(geo, warps).values())


def probs_static(geo: AttentionGeometry, warps: int) -> bool:
    """Whether the probabilities go to static shared memory. Why: a loop that reads and writes
    the one merged dynamic buffer gets a barrier every iteration (TVM cannot tell its tiles
    apart), and the probabilities' loop reads the scores. But TVM's runtime opts a kernel into
    more than 48 KB only for its dynamic part, when that alone reaches 48 KB: static + dynamic
    past 48 KB with less than 48 KB dynamic fails to launch. So static only when the whole
    block fits 48 KB, or when the dynamic buffers (at best reused: the tiles live at once in
    the scores GEMM, the softmax, the context GEMM) surely reach 48 KB."""
    t = _tiles(geo, warps)
    static = t["probs"] + t["stats"]
    if static > STATIC_SMEM:
        return False
    dynamic_min = max(t["q"] + t["k"], t["scores"], t["v"] + t["ctx"])
    return shared_bytes(geo, warps) <= STATIC_SMEM or dynamic_min >= STATIC_SMEM


def _fits(geo: AttentionGeometry, warps: int, smem: int) -> bool:
    return shared_bytes(geo, warps) <= smem


@register("cuda", "attention")
class TensorCoreAttention(Template):
    name = "tensorcore_attention"

    def supports(self, geometry, dtype: str, target) -> bool:
        """fp16, head dims of whole fragments up to 64, tiles within the arch's shared memory; more
        than one key tile; no bias (the flash template takes those). Refused, from wrong results
        on the H100 (cause not found): a single key tile (Lk <= 16); head dim 128 with 40 keys
        (with 197 keys it was right)."""
        return (dtype == "float16" and device_caps(target).has_wmma and not geometry.bias_rows
                and geometry.d % 16 == 0 and geometry.dv % 16 == 0
                and max(geometry.d, geometry.dv) <= MAX_HEAD_DIM
                and geometry.lq >= 16 and geometry.lk > KEY_TILE
                and any(_fits(geometry, w, device_caps(target).smem_optin) for w in WARPS))

    def accepts(self, info: KernelInfo) -> bool:
        return isinstance(info.geometry, AttentionGeometry) and info.dtype == "float16"

    def space(self, info: KernelInfo, target) -> ConfigSpace:
        s = ConfigSpace()
        smem = device_caps(target).smem_optin
        s.define_knob("warps", [w for w in WARPS if _fits(info.geometry, w, smem)] or [min(WARPS)])
        s.define_knob("vec_out", [4, 8])
        return s

    def fallback(self, info: KernelInfo, target, space: ConfigSpace) -> Config:
        return space.get(0)

    def compile_target(self, info: KernelInfo, cfg: Config, target):
        return optin_target(target)

    def pass_config(self, info: KernelInfo, cfg: Config, target) -> dict:
        # wmma: StorageRewrite may alias the float32 tiles with fp16 ones (see gemm/template.pass_config)
        return {"tirx.disable_storage_rewrite": True} if device_caps(target).kind == "cuda" else {}

    def preload(self) -> None:
        tvm_cuda_intrinsics()

    def apply(self, sch, info: KernelInfo, cfg: Config, target) -> None:
        apply_attention(sch, info, int(cfg["warps"]), int(cfg["vec_out"]))


def apply_attention(sch, info: KernelInfo, warps: int, vec_out: int) -> None:
    p_scope = "shared" if probs_static(info.geometry, warps) else SCOPE
    get_wmma_intrin_group = tvm_cuda_intrinsics().get_wmma_intrin_group

    g = sch.get_sblock
    ctx, scores, probs = g(BLOCKS.context), g(BLOCKS.scores), g(BLOCKS.probs)
    out = g(BLOCKS.out)
    epilogue = [b for b in info.output_blocks if b != BLOCKS.out]
    if epilogue:  # the head merge (a transpose) and elementwise ops: computed in the store
        inline_epilogue(sch, out, epilogue)

    # ---- context GEMM (probs @ v): grid over (batch, row tile); warp w: 16 rows x Dv
    *batch, i, d, j = sch.get_loops(ctx)
    bx = sch.fuse(*batch) if len(batch) > 1 else batch[0]
    qt, wi, i16 = sch.split(i, [None, warps, 16])
    d0, d16 = sch.split(d, [None, 16])
    j0, j16 = sch.split(j, [None, 16])
    sch.reorder(bx, qt, wi, j0, d0, i16, d16, j16)
    sch.bind(bx, "blockIdx.y")
    sch.bind(qt, "blockIdx.x")
    sch.bind(wi, "threadIdx.y")
    ctx_outer = sch.blockize(i16)
    sch.set_scope(ctx_outer, 0, SCOPE)
    ctx_acc = sch.cache_write(ctx_outer, 0, "wmma.accumulator")
    sch.reverse_compute_at(ctx_acc, wi)

    # ---- softmax statistics, probabilities and scores: per row tile, in shared memory
    for name in (BLOCKS.probs, BLOCKS.sum, BLOCKS.max, BLOCKS.scores):
        sch.compute_at(g(name), qt)
    sch.set_scope(probs, 0, p_scope)  # see probs_static
    sch.set_scope(scores, 0, SCOPE)
    for name in (BLOCKS.max, BLOCKS.sum):
        blk = g(name)
        sch.set_scope(blk, 0, "shared")
        rows, r = sch.get_loops(blk)[-2:]
        w, _ = sch.split(rows, [warps, None])
        steps, lane = sch.split(r, [None, 32])
        sch.unroll(steps)  # the row's loads issued together
        sch.bind(w, "threadIdx.y")
        sch.bind(lane, "threadIdx.x")  # a warp-shuffle reduction per row
    _, ty, tx = sch.split(sch.fuse(*sch.get_loops(probs)[-2:]), [None, warps, 32])
    sch.bind(ty, "threadIdx.y")
    sch.bind(tx, "threadIdx.x")
    sch.storage_align(probs, 0, axis=-2, factor=32, offset=PAD_HALF)

    # ---- scores GEMM (q @ k^T): warp w: 16 rows x Lk_pad
    i, j, r = sch.get_loops(scores)[-3:]
    swi, si16 = sch.split(i, [warps, 16])
    sj0, sj16 = sch.split(j, [None, 16])
    sr0, sr16 = sch.split(r, [None, 16])
    # K steps outside, key tiles inside: the warp's whole score row stays in accumulator
    # fragments (Lk_pad / 16 of them) and is stored after the loop, so the loop only reads shared
    # memory (a store to the merged dynamic buffer inside it costs a barrier an iteration)
    sch.reorder(swi, sr0, sj0, si16, sj16, sr16)
    sch.bind(swi, "threadIdx.y")
    scores_outer = sch.blockize(si16)
    scores_acc = sch.cache_write(scores_outer, 0, "wmma.accumulator")
    sch.reverse_compute_at(scores_acc, swi)
    sch.storage_align(scores_acc, 0, axis=-2, factor=32, offset=PAD_FLOAT)
    sch.storage_align(ctx_acc, 0, axis=-2, factor=32, offset=PAD_FLOAT)

    # ---- operand tiles: global -> shared, prologues computed in the copy
    for name in (BLOCKS.q, BLOCKS.k, BLOCKS.v):
        copy_to_shared(sch, g(name), qt, warps)
    frags = [(scores_outer, 0, sr0), (scores_outer, 1, sj0), (ctx_outer, 0, j0), (ctx_outer, 1, d0)]
    frag_blocks = []
    for blk, idx, at in frags:
        f = sch.cache_read(blk, idx, "wmma.matrix_a" if idx == 0 else "wmma.matrix_b")
        sch.compute_at(f, at)
        frag_blocks.append(f)

    # ---- output rows of a warp: float32 tile -> cast (+ epilogue) -> global (attached last:
    # its row mask, attached earlier, broke the region cover the scores' attachment checks)
    store_rows(sch, out, wi, vec_out)

    # ---- tensor cores
    gs = get_wmma_intrin_group(SCOPE, SCOPE, "float16", "float32", True)  # k stored [Lk, D]: B^T
    go = get_wmma_intrin_group(SCOPE, SCOPE, "float16", "float32", False)
    p_load = get_wmma_intrin_group(p_scope, SCOPE, "float16", "float32", False)["load_a"]
    for f, name in zip(frag_blocks, (gs["load_a"], gs["load_b"], p_load, go["load_b"])):
        sch.tensorize(sch.get_loops(f)[-2], name)
    scores_inner = sch.get_child_blocks(scores_outer)[0]
    ctx_inner = sch.get_child_blocks(ctx_outer)[0]
    s_init = sch.decompose_reduction(scores_outer, sr0)
    c_init = sch.decompose_reduction(ctx_outer, j0)
    sch.tensorize(sch.get_loops(sch.get_child_blocks(s_init)[0])[-2], gs["init"])
    sch.tensorize(sch.get_loops(sch.get_child_blocks(c_init)[0])[-2], go["init"])
    sch.tensorize(sch.get_loops(scores_inner)[-3], gs["compute"])
    sch.tensorize(sch.get_loops(ctx_inner)[-3], go["compute"])
    for acc, name in ((scores_acc, gs["store"]), (ctx_acc, go["store"])):  # 16 x 16 tiles
        ai, aj = sch.get_loops(acc)[-2:]
        aj0, _ = sch.split(aj, [None, 16])
        sch.reorder(aj0, ai)
        sch.tensorize(ai, name)


def store_rows(sch, out, wi, vec_out: int) -> None:
    """A warp's output rows (the `out` stage, the epilogue inlined) under its loop `wi`: read
    from the float32 context tile, cast, stored `vec_out` wide where the destination runs
    contiguous."""
    sch.reverse_compute_at(out, wi)
    fused = sch.fuse(*sch.get_loops(out)[-2:])
    vec = vec_out
    while vec > 1 and not stores_contiguous(sch, out, fused, vec):
        vec //= 2
    _, tx, vv = sch.split(fused, [None, 32, vec])
    sch.bind(tx, "threadIdx.x")
    sch.vectorize(vv)


def copy_to_shared(sch, blk, at, warps: int, vec: int = 8) -> None:
    """A padded operand tile copied into shared memory under loop `at`, up to `vec` elements a
    thread (8 fp16: 16 bytes) where the source runs contiguous, rows padded against bank conflicts."""
    sch.compute_at(blk, at)
    sch.set_scope(blk, 0, SCOPE)
    auto_inline_producers(sch, blk)
    loops = sch.get_loops(blk)
    inner = loops[[sch.get(l).same_as(sch.get(at)) for l in loops].index(True) + 1:][-2:]  # a single row: one loop
    fused = sch.fuse(*inner) if len(inner) > 1 else inner[0]
    # narrower where the source is not contiguous, or where a prologue's select (a ReLU) would be a
    # bool vector wider than TVM's CUDA codegen prints
    while vec > 1 and (not lanes_contiguous(sch, blk, fused, vec)
                       or vec > MAX_BOOL_LANES and bool_lanes_vary(sch, blk, fused, vec)):
        vec //= 2
    steps, ty, tx, vv = sch.split(fused, [None, warps, 32, vec])
    sch.unroll(steps)  # every load of the tile in flight at once
    sch.bind(ty, "threadIdx.y")
    sch.bind(tx, "threadIdx.x")
    sch.vectorize(vv)
    sch.storage_align(blk, 0, axis=-2, factor=32, offset=PAD_HALF)
