"""Loop-invariant code motion for fused epilogues: a TIR pass run on device functions.

A fused epilogue's per-channel math (batch_norm's gamma / sqrt(var + eps) with runtime
statistics) depends on the output column only. Inlined into the store loop, it is computed
again for every row a thread stores: on the H100 a square root and a division an element took
as long as the conv's loads and stores (results/issue9/session18). nvcc does not move them out
of the loop, so this pass does: in a serial loop free of barriers and side effects, each
maximal floating-point subexpression that calls a math function or divides, and reads
neither the loop's variables nor memory the loop writes, is bound once before the loop; so is
each such subexpression that loads (bias, mean and beta: a few registers a thread). Nothing
leaves a guard (an if, an if_then_else: a masked tail's loads), and a loop that may run no
iteration keeps its loads.
"""
from __future__ import annotations

import itertools

import tvm
from tvm import tirx
from tvm.ir.expr import Call, Expr, TensorLoad  # TensorLoad: what tirx.BufferLoad makes
from tvm_ffi import structural_equal, structural_mutate, structural_walk

from ...ops.value import expr_dtype

# math calls worth a register to compute once (cheap arithmetic is left where it is)
# (by name without its namespace: TVM 0.27 has tirx.sqrt but prim.log2, prim.if_then_else)
COSTLY_CALLS = {"sqrt", "rsqrt", "exp", "exp2", "log", "log2", "pow", "erf", "tanh", "sigmoid", "sin", "cos"}
PURE = int(tirx.CallEffectKind.Pure.value)


def _is_float(e) -> bool:
    return expr_dtype(e).startswith(("float", "bfloat"))


def _call_name(c) -> str:
    return c.op.name.rsplit(".", 1)[-1] if isinstance(c.op, tvm.ir.Op) else ""


def _pure(c) -> bool:
    return isinstance(c.op, tvm.ir.Op) and int(c.op.get_attr("TCallEffectKind") or 4) <= PURE


def _scan(loop):
    """(vars bound inside `loop`, buffers it writes, whether it holds an impure call). Buffers are
    Vars in TVM 0.27 (`buffer.data` is made anew at each access): compared with same_as."""
    bound, stored, impure = [loop.loop_var], [], []

    def visit(n):
        if isinstance(n, tirx.For):
            bound.append(n.loop_var)
        elif isinstance(n, (tirx.LetStmt, tirx.Let)):
            bound.append(n.var)
        elif isinstance(n, tirx.AttrStmt) and isinstance(n.node, tirx.IterVar):
            bound.append(n.node.var)
        elif isinstance(n, tirx.BufferStore):
            stored.append(n.buffer)
        elif isinstance(n, tirx.AllocBuffer):
            bound.append(n.buffer)
        elif isinstance(n, Call) and not _pure(n):
            impure.append(n)

    structural_walk(loop.body, visit)
    return bound, stored, bool(impure)


def _among(x, xs) -> bool:
    return any(x.same_as(y) for y in xs)


def _invariant_and_costly(e, bound, stored) -> bool:
    if not _is_float(e) or isinstance(e, (tirx.Var, tirx.FloatImm, tirx.Broadcast)):
        return False
    ok, costly = [True], [False]

    def visit(n):
        if isinstance(n, tirx.Var) and _among(n, bound):
            ok[0] = False
        elif isinstance(n, TensorLoad):
            ok[0] = ok[0] and not _among(n.source, stored) and not _among(n.source, bound)
            costly[0] = True  # a load: the parameters' values come in once
        elif isinstance(n, tirx.Let):
            ok[0] = False
        elif isinstance(n, Call):
            if not _pure(n):
                ok[0] = False
            elif _call_name(n) in COSTLY_CALLS:
                costly[0] = True
        elif isinstance(n, tirx.Div) and _is_float(n):
            costly[0] = True

    structural_walk(e, visit)
    return ok[0] and costly[0]


def _hoist_from(loop, names):
    if not (isinstance(loop.extent, tirx.IntImm) and loop.extent.value > 0):
        return loop  # a loop that may not run must not make its loads happen
    bound, stored, impure = _scan(loop)
    if impure:  # barriers, async copies, tensor-core calls: nothing moves across them
        return loop
    hoisted: list[tuple[tirx.Var, Expr]] = []

    def on_expr(e, m):
        if isinstance(e, Call) and _call_name(e) == "if_then_else":
            return e  # a guarded value (a masked tail's load) stays under its guard
        if _invariant_and_costly(e, bound, stored):
            for v, h in hoisted:
                if structural_equal(h, e):
                    return v
            v = tirx.Var(f"inv{next(names)}", expr_dtype(e))
            hoisted.append((v, e))
            return v
        return m.default_mutate(e)

    body = structural_mutate(loop.body, [(tirx.IfThenElse, lambda n, m: n), (Expr, on_expr)])
    if not hoisted:
        return loop
    new_loop = tirx.For(loop.loop_var, loop.min, loop.extent, loop.kind, body, loop.thread_binding,
                        loop.annotations)
    return tirx.SeqStmt([*(tirx.LetStmt(v, e) for v, e in hoisted), new_loop])


def hoist_loop_invariants(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """`func` with loop-invariant math bound before each serial loop (innermost loops first, so
    a value rises as far as it is invariant)."""
    names = itertools.count()

    def on_for(loop, m):
        loop = m.default_mutate(loop)
        if not isinstance(loop, tirx.For) or loop.kind not in (tirx.ForKind.SERIAL, tirx.ForKind.UNROLLED):
            return loop
        return _hoist_from(loop, names)

    return func.with_body(structural_mutate(func.body, [(tirx.For, on_for)]))


@tvm.tirx.transform.prim_func_pass(opt_level=0, name="tefuse.HoistLoopInvariants")
def HoistLoopInvariants(func, _mod, _ctx):  # noqa: N802 - TVM's pass naming
    return hoist_loop_invariants(func)


PIPELINE = "tefuse_cuda_hoist"  # TVM's default (s_tir) pipeline with the pass in its device part


def _pipeline_factory(**_):
    from tvm.s_tir import pipeline as sp

    main, host, _device = sp.default_s_tir_pipeline()

    def device():
        return tvm.ir.transform.Sequential([tirx.transform.LowerWarpMemory(), tirx.transform.StmtSimplify(),
                                            HoistLoopInvariants, tirx.transform.LowerIntrin()])

    return main, host, device


tvm.tirx.compilation_pipeline.register_tir_pipeline(PIPELINE, _pipeline_factory)
