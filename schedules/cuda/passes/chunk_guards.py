"""Tile copies of a padded conv test their zero fills once per 16-byte chunk, so they stay vector
copies (cp.async) where the reduction is not a whole number of k steps.

Why: an implicit-GEMM conv whose reduction K = R*S*C is not a multiple of the k step (a 3x3 conv of
24, 32, 40, 48 or 96 channels) copies its A tile as `if_then_else(k < K, if_then_else(<padding>,
x, 0), 0)`: pad_einsum's K guard around the conv's own zero padding. TVM's VectorizeLoop gives up
on the nesting and on conditions it cannot prove equal across the lanes, so each 16-byte chunk
became 8 predicated 2-byte loads and shared stores (no cp.async; 106 registers where 69 do, for
24->24 channels at 192x192 on sm_90; the mma.sync path the same).

What: in each tile copy marked with its vector width L (COPY_LANES, set by
gemm/tiles.fetch_to_shared), nested zero fills become one `if_then_else(c1 and c2 ..., x, 0)`
(nested fills of different constants, an int8 conv padded with its zero point, stay nested),
and every use of the index k the lanes run along (the copy's last: a K-major tile's reduction)
in the condition is rewritten on whole chunks:
`k // d` as `(k // L) // (d / L)` and `k < K` as `k // L < K / L`, identities where L divides d
and K. The vectorizer then sees one condition for the chunk's lanes (k // L is the same for all of
them: the copy's lanes run along k from a multiple of L). A condition that uses k any other way
(a chunk straddling two filter taps: C not a multiple of L) leaves the copy as it was, and so
does a single guard, which TVM already vectorizes (a conv of whole k steps: C a multiple of 64).
"""
from __future__ import annotations

from tvm import s_tir, tirx
from tvm_ffi import VisitInterrupt, WalkResult, structural_map, structural_walk

from ....ops.value import expr_dtype, is_if_then_else

COPY_LANES = "tefuse_copy_lanes"  # on a tile copy block: its vector width along its innermost axis


def chunk_guards(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """`func` with each marked tile copy's zero-fill guards flattened and tested per chunk (module
    docstring); the marks are removed."""
    def on_block(block):
        if COPY_LANES not in block.annotations:
            return block
        lanes = int(block.annotations[COPY_LANES])
        annotations = {k: v for k, v in block.annotations.items() if k != COPY_LANES}
        body = _chunked(block.body, block.iter_vars[-1].var, lanes) if lanes > 1 else block.body
        return s_tir.SBlock(block.iter_vars, block.reads, block.writes, block.name_hint, body, block.init,
                            block.alloc_buffers, block.match_buffers, annotations)

    return func.with_body(structural_map(func.body, (s_tir.SBlock, on_block)))


def _chunked(store, k, lanes: int):
    if not isinstance(store, tirx.BufferStore) or not is_if_then_else(store.value):
        return store
    guards, value = _guards(store.value)
    if len(guards) < 2:
        return store  # one guard: the vectorizer takes it as it is (whole k steps of whole taps)
    chunked = [(_on_chunks(c, k, lanes), fill) for c, fill in guards]
    if any(_uses(c, k, lanes) for c, _ in chunked):
        return store
    fills = {fill.value for _, fill in chunked}
    if fills == {0}:  # one fill: one condition
        cond = chunked[0][0]
        for c, _ in chunked[1:]:
            cond = tirx.And(cond, c)
        return tirx.BufferStore(store.buffer, tirx.if_then_else(cond, value, chunked[0][1]), store.indices)
    # fills of their own (an int8 conv padded with its zero point inside the K tail's zeros): kept
    # nested, each condition on chunks (passes/int_tile_copies.py makes them one cp.async)
    for c, fill in reversed(chunked):
        value = tirx.if_then_else(c, value, fill)
    return tirx.BufferStore(store.buffer, value, store.indices)


def _guards(value):
    """`if_then_else(c1, if_then_else(c2, x, f2), f1)` -> ([(c1, f1), (c2, f2)], x): the guards
    of nested fills of constants, outermost first."""
    guards = []
    while is_if_then_else(value):
        c, x, fill = value.args
        if not isinstance(fill, (tirx.IntImm, tirx.FloatImm)):
            break
        guards.append((c, fill))
        value = x
    return guards, value


def _on_chunks(cond, k, lanes: int):
    """cond with `k // d` and `k < K` (L | d, L | K) written on k // L; any other use of k stays."""
    dtype = expr_dtype(k)  # (int64 where an extent is symbolic)
    chunk = tirx.floordiv(k, tirx.const(lanes, dtype))

    def div(e):
        if e.a.same_as(k) and isinstance(e.b, tirx.IntImm) and e.b.value % lanes == 0:
            return tirx.floordiv(chunk, tirx.const(e.b.value // lanes, dtype))
        return e

    def less(e):
        if e.a.same_as(k) and isinstance(e.b, tirx.IntImm) and e.b.value % lanes == 0:
            return tirx.LT(chunk, tirx.const(e.b.value // lanes, dtype))
        return e

    return structural_map(cond, [(tirx.FloorDiv, div), (tirx.LT, less)])


def _uses(expr, var, lanes: int) -> bool:
    """Whether var occurs in expr other than as `var // lanes` (the chunk index _on_chunks writes)."""
    def on_div(e):
        if e.a.same_as(var) and isinstance(e.b, tirx.IntImm) and e.b.value == lanes:
            return WalkResult.SKIP
        return None

    def on_var(v):
        return VisitInterrupt(v) if v.same_as(var) else None

    return structural_walk(expr, [(tirx.FloorDiv, on_div), (tirx.Var, on_var)], order="pre") is not None
