"""A padded GEMM's row bounds over run-time dims, without dividing by them.

Why: a GEMM over a transformer's tokens has M = N*S rows and writes them to an [N, S, H]
output, so the crop of its padded tile checks each row r as `r // S < N and r % S < S` (and
`0 <= r // S`, `0 <= r % S`). With S a kernel argument, that is an integer division and a
modulo by a run-time value for every stored vector: some forty instructions, where the store
itself (whose address simplifies to r * H + c) takes one. TVM's simplifier cannot drop them,
since it does not know S > 0; a dim is at least 1 (graph/dims.DimRange), so for each dim d among
the kernel's arguments:
`x // d < e` is `x < e * d`, `x % d < d` and `0 <= x % d` hold, and `0 <= x // d` is `0 <= x`.

What: every comparison of that form in the scheduled PrimFunc is rewritten (block predicates,
if conditions); anything else is left as it is. The GEMM templates apply it to every kernel
(TensorCoreGemm.finish); a kernel of fixed sizes has no dim argument and is unchanged.
"""
from __future__ import annotations

from tvm import tirx
from tvm.tirx.analysis import undefined_vars
from tvm_ffi import structural_map

from ....ops.value import expr_dtype as _dtype


def divide_free_bounds(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """`func` with the comparisons the module docstring lists rewritten without the division."""
    # the run-time dims: the integer variables the body reads and does not define (the buffers'
    # shapes bind them from the arguments)
    dims = [v for v in undefined_vars(func.body, list(func.params)) if _dtype(v).startswith("int")]
    if not dims:
        return func

    def by_dim(e, kind) -> bool:
        return isinstance(e, kind) and isinstance(e.b, tirx.Var) and any(e.b.same_as(d) for d in dims)

    def zero(e) -> bool:
        return isinstance(e, tirx.IntImm) and e.value == 0

    def less(c):
        if by_dim(c.a, tirx.FloorDiv):  # x // d < e
            return tirx.LT(c.a.a, c.b * c.a.b)
        if by_dim(c.a, tirx.FloorMod) and c.b.same_as(c.a.b):  # x % d < d
            return tirx.const(True, "bool")
        return c

    def at_most(c):
        if zero(c.a) and by_dim(c.b, tirx.FloorMod):  # 0 <= x % d
            return tirx.const(True, "bool")
        if zero(c.a) and by_dim(c.b, tirx.FloorDiv):  # 0 <= x // d
            return tirx.LE(c.a, c.b.a)
        return c

    return func.with_body(structural_map(func.body, [(tirx.LT, less), (tirx.LE, at_most)]))
