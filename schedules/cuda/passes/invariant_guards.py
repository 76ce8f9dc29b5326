"""A guard that a loop's iterations all share, tested once before the loop instead of in it.

Why: a GEMM over run-time rows crops its padded tile in the store loop. Where a thread's rows
in that loop all lie in one image (ResNet's 56x56 rows come in groups of 64), the simplified
crop no longer depends on the loop (`(blockIdx.y * 2 + threadIdx.y / 4) / 49 < N`), yet it stays
inside it. nvcc then unrolled the loop half as far as the exact kernel's, which has no crop
(two residual loads and stores in flight a thread instead of four; sm_90 SASS of a 1x1 conv
64->256 with its residual over N x 56 x 56). TVM's HoistIfThenElse moves no condition that
reads a thread index.

What: after the device function is simplified, a loop whose whole body is an `if` without an
else, on a condition that does not read the loop's variable, becomes that `if` around the loop,
unless the body synchronises threads (a barrier must stay where every thread of the block reaches
it). The loop then does what it did: nothing where the condition is false.
"""
from __future__ import annotations

import tvm
from tvm import tirx
from tvm_ffi import structural_map, structural_walk


def hoist_invariant_guards(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """`func` with each guard its loop's iterations share moved before the loop."""

    def on_for(loop):
        guard = loop.body
        if (not isinstance(guard, tirx.IfThenElse) or guard.else_case is not None
                or _reads(guard.condition, loop.loop_var) or _synchronises(guard.then_case)):
            return loop
        inner = tirx.For(loop.loop_var, loop.min, loop.extent, loop.kind, guard.then_case, loop.thread_binding,
                         loop.annotations, loop.step)
        return tirx.IfThenElse(guard.condition, inner, None)

    return func.with_body(structural_map(func.body, (tirx.For, on_for)))


def _reads(expr, var) -> bool:
    found = []
    structural_walk(expr, (tirx.Var, lambda v: found.append(v) if v.same_as(var) else None))
    return bool(found)


# calls up to this effect kind neither write state nor run opaque code
READS_AT_MOST = int(tirx.CallEffectKind.ReadState.value)


def _synchronises(stmt) -> bool:
    """Whether a statement may synchronise threads: a barrier, or any call with effects beyond
    reading (an extern device function, such as the wgmma wrappers, may hold `__syncthreads`)."""
    found = []

    def call(c):
        kind = c.op.get_attr("TCallEffectKind") if isinstance(c.op, tvm.ir.Op) else None
        if kind is None or int(kind) > READS_AT_MOST:
            found.append(c)

    structural_walk(stmt, (tvm.ir.Call, call))
    return bool(found)


@tvm.tirx.transform.prim_func_pass(opt_level=0, name="tefuse.HoistInvariantGuards")
def HoistInvariantGuards(func, _mod, _ctx):  # noqa: N802 - TVM's pass naming
    return hoist_invariant_guards(func)
