"""Tile copies past an operand's last row read a real row instead of a predicated zero fill.

Why: pad_einsum pads M and N to whole block tiles. A tile copy then reads
`if_then_else(row < M, A[row, k], 0)`, which TVM lowers to a predicated cp.async plus a
zero-filling store. In SASS that is a branch, the copy and a store for each 16 bytes of each k
step. On 2048x7x7->512 at batch 16 (M = 784, 12.25 tiles of 64 rows) the activation copies drew
about 2.5 times the stall samples of the unpredicated weight copies (ncu, H100). A padded
row of A only ever meets a padded row of the output, and a padded row of B a padded column; the
epilogue crops both. So any finite value will do there: padded row r reads row r mod M. Not
the last row for all of them: 48 rows of a tile reading one row's bytes every k step made the
ragged 7x7 convs 40% slower on the H100 (one L2 line hit by the whole tile).

K padding is left alone. Its zeros are summed into real outputs.

What: the wgmma schedule marks its two tile copies (ROWS_ANNOTATION; their iter vars are the
[S, rows, K] view, rows second to last). On the scheduled PrimFunc, in each marked block whose
value is `if_then_else(cond, load, 0)`, the conjuncts of `cond` of the form `row < C` go and `row`
becomes `row mod C` in the load. Any other conjunct stays: a conv's zero padding, K's tail.
Every wgmma kernel gets the rewrite (TensorCoreGemm.finish); no switch keeps the zero fill.
"""
from __future__ import annotations

from tvm import s_tir, tirx
from tvm.ir.expr import TensorLoad
from tvm_ffi import structural_map, structural_walk

from ....ops.value import is_if_then_else


ROWS_ANNOTATION = "tefuse_clamp_rows"  # on a tile copy block: its rows past the last may read real rows


def clamp_rows(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """`func` with every marked tile copy's row predicate replaced by a read of row `row mod M`
    (module docstring); the marks are removed."""
    def on_block(block):
        if ROWS_ANNOTATION not in block.annotations:
            return block
        annotations = {k: v for k, v in block.annotations.items() if k != ROWS_ANNOTATION}
        body = _clamped(block.body, block.iter_vars[-2].var)
        return s_tir.SBlock(block.iter_vars, block.reads, block.writes, block.name_hint, body, block.init,
                            block.alloc_buffers, block.match_buffers, annotations)

    return func.with_body(structural_map(func.body, (s_tir.SBlock, on_block)))


def _clamped(store, row):
    if not isinstance(store, tirx.BufferStore):
        return store
    value = store.value
    if not is_if_then_else(value):
        return store
    cond, inner, other = value.args
    if not (isinstance(other, (tirx.IntImm, tirx.FloatImm)) and other.value == 0 and _loads(inner)):
        return store
    bound, rest = None, []
    for c in _conjuncts(cond):
        if isinstance(c, tirx.LT) and c.a.same_as(row) and isinstance(c.b, tirx.IntImm) and bound is None:
            bound = c.b
        else:
            rest.append(c)
    if bound is None:
        return store
    wrapped = tirx.floormod(row, bound)
    clamp = lambda e: structural_map(e, (tirx.Var, lambda v: wrapped if v.same_as(row) else v))
    new_value = clamp(inner)  # (a conv's zero padding inside it is evaluated at the wrapped row)
    if rest:
        keep = rest[0]
        for c in rest[1:]:
            keep = tirx.And(keep, c)
        new_value = tirx.if_then_else(clamp(keep), new_value, other)
    return tirx.BufferStore(store.buffer, new_value, store.indices)


def _loads(expr) -> bool:
    found = []
    structural_walk(expr, [(TensorLoad, found.append)])
    return bool(found)


def _conjuncts(cond) -> list:
    if isinstance(cond, tirx.And):
        return _conjuncts(cond.a) + _conjuncts(cond.b)
    return [cond]
