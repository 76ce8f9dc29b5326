"""Stage a tensor-core kernel's accumulators in the output's 16-bit type: a post-schedule rewrite.

Why: the tensor-core schedules store the float32 accumulator fragments into a shared staging
tile that the fused epilogue reads (gemm/tiles.py, stage_accumulators). For an fp16/bf16 op the
epilogue reads every staging element as `Cast(float16|bfloat16, S[...])` first (a conv's or
dense's result is its float32 sum rounded: ops/conv2d.py, ops/dense.py), so rounding the values
as the fragments are stored computes the same numbers bit for bit, while the tile's bytes
written and read through shared memory, and its footprint, halve. CUTLASS's Hopper epilogue
stages in the output type for the same reason. The memory-bound convs at batch 16 spend a good
part of their time in that round trip: with the rewrite every fp16 ResNet-50 conv at batch 16
got faster (tefuse's times 0.973x, geomean).

Why after scheduling, not `sch.unsafe_set_dtype`: that would leave `Cast(f16, Cast(f32, S))` on
the loads, and the float32 store intrinsic's description would no longer match the block.

What: on a scheduled PrimFunc, a float32 shared buffer whose every load sits directly under one
16-bit Cast becomes a buffer of that type; its stores (plain, or through a tensorized store's
match buffer) cast their values; the casts on its loads go; the rows' padding annotation
(`buffer_dim_align`, gemm/tiles.tensorize_staging_store) keeps rows 16 bytes past a 32-bank
multiple, which suits 16-bit fragment stores as 32 bytes suited float32 pairs. Anything else touching the
buffer (a call taking it, as wmma's store_matrix_sync does through a float32 access pointer; a load
without the cast; a split-K partial sum or tf32 result kept in float32) leaves the function as it is.
"""
from __future__ import annotations

from typing import Optional

from tvm import s_tir, tirx
from tvm.ir.expr import Call, TensorLoad
from tvm_ffi import VisitInterrupt, WalkResult, structural_mutate, structural_walk

from ....ops.value import expr_dtype

NARROW = ("float16", "bfloat16")
SHARED = ("shared", "shared.dyn")
DIM_ALIGN = "buffer_dim_align"


def _staging_candidates(func, scopes) -> list:
    found = []
    structural_walk(func.body, [(s_tir.SBlock, lambda b: found.extend(
        buf for buf in b.alloc_buffers if str(buf.dtype) == "float32" and buf.scope() in scopes))])
    return found


def _narrow_type(func, buf) -> Optional[str]:
    """The 16-bit type every load of `buf` is cast to, or None (a load without one, or two types)."""
    uncast, cast_to = [], set()

    def on_cast(n):
        if isinstance(n.value, TensorLoad) and n.value.source.same_as(buf):
            cast_to.add(expr_dtype(n))
            return WalkResult.SKIP  # its load is accounted for
        return None

    def on_load(n):  # reached only where no such cast stands over it (pre-order, skipped below one)
        if n.source.same_as(buf):
            uncast.append(n)

    structural_walk(func.body, [(tirx.Cast, on_cast), (TensorLoad, on_load)], order="pre")
    if uncast or len(cast_to) != 1:
        return None
    (dtype,) = cast_to
    return dtype if dtype in NARROW else None


def _retyped(buf, dtype: str):
    """`buf` as a buffer of `dtype`: same shape, strides, offset and scope, a new data pointer."""
    return tirx.decl_buffer(buf.shape, dtype, buf.name, strides=buf.strides, elem_offset=buf.elem_offset,
                            scope=buf.scope(), data_alignment=buf.data_alignment, offset_factor=buf.offset_factor)


def _passed_to_calls(func, bufs) -> bool:
    """Whether a call takes one of `bufs` (or its data pointer) as an argument: an access pointer
    typed float32, an intrinsic reading the tile as it is."""
    def on_call(c):
        if any(a.same_as(b) or a.same_as(b.data) for a in c.args for b in bufs):
            return VisitInterrupt(c)
        return None

    return structural_walk(func.body, [(Call, on_call)]) is not None


def _loaded(func, bufs) -> bool:
    """Whether anything loads one of `bufs` (a store intrinsic's view of the tile is write-only;
    one that read would read float32 values)."""
    def on_load(n):
        return VisitInterrupt(n) if any(n.source.same_as(b) for b in bufs) else None

    return structural_walk(func.body, [(TensorLoad, on_load)]) is not None


def _narrow_one(func, buf, dtype: str):
    new = {buf: _retyped(buf, dtype)}

    def collect_views(b):  # a tensorized store writes through a match buffer over the staging tile
        for mb in b.match_buffers:
            if mb.source.source.same_as(buf):
                new[mb.buffer] = _retyped(mb.buffer, dtype)

    structural_walk(func.body, [(s_tir.SBlock, collect_views)])
    olds = list(new)
    views = olds[1:]
    if _passed_to_calls(func, olds) or _loaded(func, views):  # wmma's store takes a float32 pointer
        return None

    def swap(b):
        for old in olds:
            if b.same_as(old):
                return new[old]
        return None

    def on_buffer(n, _m):
        to = swap(n)
        return n if to is None else to

    def on_cast(n, m):
        if isinstance(n.value, TensorLoad) and swap(n.value.source) is not None and expr_dtype(n) == dtype:
            return tirx.BufferLoad(swap(n.value.source), [m.mutate(i) for i in n.value.indices])
        return m.default_mutate(n)

    def on_store(n, m):
        to = swap(n.buffer)
        if to is None:
            return m.default_mutate(n)
        return tirx.BufferStore(to, tirx.Cast(dtype, m.mutate(n.value)), [m.mutate(i) for i in n.indices])

    def on_block(n, m):
        b = m.default_mutate(n)
        align = b.annotations.get(DIM_ALIGN) if b.annotations else None
        if align is None or not any(w.source.same_as(new[buf]) for w in b.writes):
            return b
        # [buffer index, axis, factor, offset] in elements: the factor stays 32 banks (64 halves),
        # the offset 8 elements (16 bytes): a warp's fragment stores (a half or a pair of them a
        # lane, 8 rows x 4 lanes) then fall on 32 different banks, and rows stay 16-byte aligned
        # for the epilogue's vector reads. (Every BN in the tile list is a multiple of 64, so the
        # stride comes out as before in elements: BN + 8.)
        fixed = [[int(i), int(ax), int(f) * 2, int(o)] if b.writes[int(i)].source.same_as(new[buf])
                 else [int(i), int(ax), int(f), int(o)] for i, ax, f, o in align]
        ann = {k: v for k, v in b.annotations.items()}
        ann[DIM_ALIGN] = fixed
        return s_tir.SBlock(b.iter_vars, b.reads, b.writes, b.name_hint, b.body, b.init, b.alloc_buffers,
                            b.match_buffers, ann, b.span)

    body = structural_mutate(func.body, [(s_tir.SBlock, on_block), (tirx.Cast, on_cast),
                                         (tirx.BufferStore, on_store), (tirx.Buffer, on_buffer)])
    # anything the rewrite did not reach (an address taken, a call on the data pointer) keeps
    # the old float32 buffer alive: leave the function as it was
    stale = []
    structural_walk(body, [(tirx.Var, lambda v: stale.append(v) if any(v.same_as(o.data) for o in olds) else None)])
    return None if stale else func.with_body(body)


def narrow_staging(func, scopes=SHARED):
    """`func` with each float32 tile of `scopes` (shared memory; on llvm, where the template's
    tile is a global buffer, the tests pass "global") that is only ever read rounded to fp16/bf16
    stored in that type (see the module docstring); `func` itself where there is none."""
    for buf in _staging_candidates(func, scopes):
        dtype = _narrow_type(func, buf)
        if dtype is None:
            continue
        narrowed = _narrow_one(func, buf, dtype)
        if narrowed is not None:
            func = narrowed
    return func
