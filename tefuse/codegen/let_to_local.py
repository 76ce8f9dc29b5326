"""Let-bound values become one-element local buffers before LLVM codegen.

Why: an op rule that uses its operand twice (relu's select, gelu, x * sigmoid(x)) binds the
operand with a `Let` (ops/value.bind), so a chain of N such ops inlined into one kernel stays N
bindings long instead of 2^N nodes. TVM's LLVM codegen, however, hands every Let to its
arithmetic analyzer (`analyzer.Bind`), which substitutes the values of the earlier bindings
into each new one: the expansion comes back there (a 10-op relu chain took a minute to
compile). A local buffer is opaque to the analyzer, and LLVM's mem2reg turns it back into a
register.

What: in every BufferStore of a host function, each Let that is not inside an if_then_else
branch (those must stay conditional) becomes `AllocBuffer(b); b[0] = value` before the store,
and its variable a load of b[0]. CUDA's C codegen prints Lets as local variables and needs
none of this; the pass runs in the host finalization of `PIPELINE`, compile.py's default.
"""
from __future__ import annotations

import tvm
from tvm import tirx
from tvm.s_tir.pipeline import default_s_tir_pipeline
from tvm.ir.expr import Call
from tvm_ffi import VisitInterrupt, structural_map, structural_walk

from ..ops.value import expr_dtype, is_if_then_else

PIPELINE = "tefuse_default"


def _guarded_lets(expr) -> set:
    """The variables of Lets inside an if_then_else branch (hoisting them would evaluate their
    values unconditionally: a guarded out-of-bounds load among them)."""
    guarded: set = set()

    def on_call(c):
        if is_if_then_else(c):
            for branch in c.args[1:]:
                structural_walk(branch, (tirx.Let, lambda let: guarded.add(let.var)))

    structural_walk(expr, (Call, on_call))
    return guarded


def _hoisted(store):
    if not _has_let(store.value):
        return store
    guarded = _guarded_lets(store.value)
    bindings: list = []  # (var, value) in evaluation order: a value's bindings, then its own

    def on_let(let):
        # pre-order: a value's bindings go first, then its own, then the body's (a body that is
        # itself a Let is taken here: the walk descends into what this returns, not onto it)
        while isinstance(let, tirx.Let) and let.var not in guarded:
            bindings.append((let.var, structural_map(let.value, (tirx.Let, on_let), order="pre")))
            let = let.body
        return let  # a guarded Let: everything inside it is guarded too, and stays

    value = structural_map(store.value, (tirx.Let, on_let), order="pre")
    if not bindings:
        return store
    loads, stmts = {}, []
    for k, (var, bound) in enumerate(bindings):
        buf = tirx.decl_buffer((1,), expr_dtype(bound), name=f"let{k}", scope="local")
        stmts.append(tirx.AllocBuffer(buf))
        stmts.append(tirx.BufferStore(buf, _substitute(bound, loads), [0]))
        loads[var] = tirx.BufferLoad(buf, [0])
    stmts.append(tirx.BufferStore(store.buffer, _substitute(value, loads), store.indices))
    return tirx.SeqStmt(stmts)


def _has_let(expr) -> bool:
    return structural_walk(expr, (tirx.Let, VisitInterrupt), order="pre") is not None


def _substitute(expr, loads: dict):
    if not loads:
        return expr
    return structural_map(expr, (tirx.Var, lambda v: loads.get(v, v)))


@tvm.tirx.transform.prim_func_pass(opt_level=0, name="tefuse.LetToLocal")
def LetToLocal(func, _mod, _ctx):  # noqa: N802 - TVM's pass naming
    """The module docstring's rewrite, after ConvertSSA (a Let duplicated by compute_inline binds
    one variable twice; renamed, each binding gets its own buffer)."""
    if not _has_let(func.body):
        return func
    func = tvm.tirx.transform.ConvertSSA()(tvm.IRModule({"f": func}))["f"]
    return func.with_body(structural_map(func.body, (tirx.BufferStore, _hoisted)))


def _pipeline_factory(**_):
    """TVM 0.27's default (s_tir) pipelines, LetToLocal last in the host finalization."""
    main, host, device = default_s_tir_pipeline()

    def host_passes():
        return tvm.ir.transform.Sequential([host(), LetToLocal])

    return main, host_passes, device


tvm.tirx.compilation_pipeline.register_tir_pipeline(PIPELINE, _pipeline_factory)
