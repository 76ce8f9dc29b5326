"""Loop-invariant code motion for fused epilogues: a TIR pass run on device functions.

A fused epilogue's per-channel math (batch_norm's gamma / sqrt(var + eps) with runtime
statistics) depends on the output column only. Inlined into the store loop, it is computed again
for every row a thread stores, and nvcc does not move it out (a tensor-core conv's PTX computed
the scale twice an element). This pass binds it once before the loop: in a serial loop
of positive constant extent, free of barriers, side effects, while loops and asserts, each
maximal floating-point subexpression that calls a math function, divides or loads, and reads
neither the loop's variables nor memory anything writes, becomes a let before the loop.

Only loads of read-only parameters move: buffers the function's parameters (or top-level
declarations over a variable) give, in a function whose parameters do not alias
(`tirx.noalias`), that no other buffer views, that nothing stores to and whose address nothing
takes. Nothing leaves an if_then_else, the right operand of && or ||, or an inner loop that may
not run. An if's body is left only by values whose every load is provably inside its buffer for
any value of the loop and thread indices it reads (`_in_bounds`): the padded tail's row guard of a
tensor-core epilogue (M = 784 at 7x7, batch 16: not whole 64-row tiles) kept the per-channel
scale in the loop, computed for every element with IEEE division and square root, while the
guard says nothing of the channel; a load that may fall outside its buffer (a column guard, an
unbounded index) stays under its guard. A Select's arms are not guards:
TVM's RewriteUnsafeSelect, earlier in the pipeline, has made every Select whose arms load an
if_then_else. A product moved out of a sum can no longer fuse into an FMA
with it: a result may differ by an ulp.

Then (`raise_lets`) the parameter loads those values read are bound
at the front of their statement list: a tensor-core kernel issues its bias and batch_norm loads
with its first operand tiles, not after its mainloop.
"""
from __future__ import annotations

import itertools

import tvm
from tvm.s_tir import pipeline as sp
import tvm.sym  # noqa: F401 - the arithmetic analyzer (TVM 0.27's tvm.arith)
from tvm import tirx
from tvm.ir.expr import Call, Expr, TensorLoad  # TensorLoad: what tirx.BufferLoad makes
from tvm_ffi import structural_equal, structural_mutate, structural_walk

from ....ops.value import expr_dtype
from ...warp_memory import LOWERS_ALL_WARP_BUFFERS, LowerAllWarpMemory
from .byte_vectors import PackByteVectors
from .int_tile_copies import InjectIntTileCopies
from .invariant_guards import HoistInvariantGuards
from .s_tir_main import main_pipeline
from .smem_limit import CheckDynamicShared

# math calls worth a register to compute once (cheap arithmetic is left where it is)
# (by name without its namespace: TVM 0.27 has tirx.sqrt but prim.log2, prim.if_then_else)
COSTLY_CALLS = {"sqrt", "rsqrt", "exp", "exp2", "log", "log2", "pow", "erf", "tanh", "sigmoid", "sin", "cos"}
# statements nothing moves across (a loop's exit, a test that may stop the kernel)
BLOCKING = (tirx.While, tirx.AssertStmt, tirx.Break, tirx.Continue, tirx.Return)
# calls left whole: a guarded value (its loads happen only under the guard), an address
KEEP_CALLS = {"if_then_else", "address_of"}
PURE = int(tirx.CallEffectKind.Pure.value)
HOISTED, RAISED = "inv", "param"  # let names: a hoisted value (_hoist_from), a raised load (raise_lets)


def _is_float(e) -> bool:
    return expr_dtype(e).startswith(("float", "bfloat"))


def _call_name(c) -> str:
    return c.op.name.rsplit(".", 1)[-1] if isinstance(c.op, tvm.ir.Op) else ""


def _pure(c) -> bool:
    kind = c.op.get_attr("TCallEffectKind") if isinstance(c.op, tvm.ir.Op) else None
    return kind is not None and int(kind) <= PURE


def _runs(loop) -> bool:
    """Whether a loop surely runs its body at least once (a constant, positive extent)."""
    return isinstance(loop.extent, tirx.IntImm) and loop.extent.value > 0


def _readonly_buffers(func) -> list:
    """The buffers whose loads may move: see the module docstring."""
    if not (func.attrs and bool(func.attrs.get("tirx.noalias", False))):
        return []
    decls, stored, escaped, handles = [], [], [], []

    def visit(n):
        if isinstance(n, tirx.DeclBuffer):
            decls.append(n)
        elif isinstance(n, tirx.BufferStore):
            stored.append(n.buffer)
        elif isinstance(n, Call) and _call_name(n) == "buffer_data":  # an address taken: a view, a copy
            escaped.append(n.args[0])
        elif isinstance(n, Call) and _call_name(n) == "address_of" and isinstance(n.args[0], TensorLoad):
            escaped.append(n.args[0].source)
        elif isinstance(n, tirx.Var):
            handles.append(n)

    structural_walk(func.body, visit)
    # a declaration over a handle that appears nowhere else (no second view through a copy of it)
    over_var = [d for d in decls if isinstance(d.data, tirx.Var) and sum(h.same_as(d.data) for h in handles) == 1]
    # TVM 0.27: a Buffer parameter is the param itself (no buffer_map); a handle one never loads
    candidates = list(func.params) + [d.buffer for d in over_var]
    return [b for b in candidates if not _among(b, stored) and not _among(b, escaped)]


def _scan(loop):
    """(vars bound inside `loop`, whether it holds something nothing may move across: an impure
    call, a while loop, an assert)."""
    bound, blocked = [loop.loop_var], []

    def visit(n):
        if isinstance(n, tirx.For):
            bound.append(n.loop_var)
        elif isinstance(n, (tirx.LetStmt, tirx.Let)):
            bound.append(n.var)
        elif isinstance(n, tirx.AttrStmt) and isinstance(n.node, tirx.IterVar):
            bound.append(n.node.var)
        elif isinstance(n, (tirx.AllocBuffer, tirx.DeclBuffer)):
            bound.append(n.buffer)
        elif isinstance(n, BLOCKING) or (isinstance(n, Call) and not _pure(n)):
            blocked.append(n)

    structural_walk(loop.body, visit)
    return bound, bool(blocked)


def _among(x, xs) -> bool:
    """Buffers are Vars in TVM 0.27 (`buffer.data` is made anew at each access): same_as."""
    return any(x.same_as(y) for y in xs)


def _invariant_and_costly(e, bound, readonly) -> bool:
    if not _is_float(e) or isinstance(e, (tirx.Var, tirx.FloatImm, tirx.Broadcast)):
        return False
    ok, costly = [True], [False]

    def visit(n):
        if isinstance(n, tirx.Var) and _among(n, bound):
            ok[0] = False
        elif isinstance(n, TensorLoad):
            ok[0] = ok[0] and _among(n.source, readonly)
            costly[0] = True  # a parameter's value comes in once
        elif isinstance(n, tirx.Let):
            ok[0] = False
        elif isinstance(n, Call):
            if not _pure(n) or _call_name(n) in KEEP_CALLS:
                ok[0] = False
            elif _call_name(n) in COSTLY_CALLS:
                costly[0] = True
        elif isinstance(n, tirx.Div) and _is_float(n):
            costly[0] = True

    structural_walk(e, visit)
    return ok[0] and costly[0]


def index_analyzer(func):
    """An arithmetic analyzer that knows every loop variable's and thread index's range in `func`
    (constant extents only): what `_in_bounds` proves a load's index inside its buffer with."""
    ana = tvm.sym.Analyzer()

    def visit(n):
        if isinstance(n, tirx.For) and isinstance(n.min, tirx.IntImm) and isinstance(n.extent, tirx.IntImm):
            ana.bind(n.loop_var, tvm.ir.Range.from_min_extent(n.min, n.extent))
        elif (isinstance(n, tirx.AttrStmt) and n.attr_key == "thread_extent" and isinstance(n.node, tirx.IterVar)
              and isinstance(n.value, tirx.IntImm)):
            ana.bind(n.node.var, tvm.ir.Range.from_min_extent(0, n.value))

    structural_walk(func.body, visit)
    return ana


def _lane_ends(idx) -> list:
    """The index values a (possibly vector) index takes at its extremes: a Ramp's first and last
    lanes, a Broadcast's value, a scalar itself."""
    if isinstance(idx, tirx.Ramp):
        return [idx.base, idx.base + idx.stride * (idx.lanes - 1)]
    return [idx.value] if isinstance(idx, tirx.Broadcast) else [idx]


def _in_bounds(e, ana) -> bool:
    """Whether every load in `e` reads inside its buffer whatever values its indices' loop and
    thread variables take, so that it may run outside a guard."""
    loads = []
    structural_walk(e, lambda n: loads.append(n) if isinstance(n, TensorLoad) else None)
    return all(len(ld.source.shape) == len(ld.indices)
               and all(ana.can_prove(tirx.all(x >= 0, x < ext))
                       for idx, ext in zip(ld.indices, ld.source.shape) for x in _lane_ends(idx))
               for ld in loads)


def _left_operand_only(e, m):
    """C's && and ||: the right operand may not run, so nothing in it moves."""
    return type(e)(m.mutate(e.a), e.b)


def _bind_once(bound: list, e, name: str):
    """The variable `bound` ((var, expr) pairs) has for an expression equal to `e`, else a new one
    named `name`, appended."""
    for v, h in bound:
        if structural_equal(h, e):
            return v
    v = tirx.Var(name, expr_dtype(e))
    bound.append((v, e))
    return v


def _hoist_from(loop, readonly, names, ana):
    if not _runs(loop):
        return loop  # a loop that may not run must not make its loads happen
    bound, blocked = _scan(loop)
    if blocked:  # barriers, async copies, tensor-core calls, while loops, asserts
        return loop
    hoisted: list[tuple[tirx.Var, Expr]] = []

    def handlers(guarded: bool) -> list:
        """Mutation rules for the loop body; `guarded`: inside an if's branch."""
        def on_expr(e, m):
            if isinstance(e, Call) and _call_name(e) in KEEP_CALLS:
                return e  # a guarded value (a masked tail's load), an address: left whole
            if isinstance(e, (tirx.And, tirx.Or)):
                return _left_operand_only(e, m)
            if _invariant_and_costly(e, bound, readonly) and (not guarded or _in_bounds(e, ana)):
                return _bind_once(hoisted, e, f"{HOISTED}{next(names)}")
            return m.default_mutate(e)

        def on_if(n, m):  # its branches run only under the condition: see _in_bounds
            inner = handlers(True)
            return tirx.IfThenElse(n.condition, structural_mutate(n.then_case, inner),
                                   structural_mutate(n.else_case, inner) if n.else_case is not None else None)

        return [(tirx.IfThenElse, on_if),
                (tirx.For, lambda n, m: m.default_mutate(n) if _runs(n) else n),  # may not run: nothing leaves it
                (Expr, on_expr)]

    body = structural_mutate(loop.body, handlers(False))
    if not hoisted:
        return loop
    new_loop = tirx.For(loop.loop_var, loop.min, loop.extent, loop.kind, body, loop.thread_binding,
                        loop.annotations, step=loop.step, span=loop.span)
    return tirx.SeqStmt([*(tirx.LetStmt(v, e) for v, e in hoisted), new_loop])


def hoist_loop_invariants(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """`func` with loop-invariant math bound before each serial loop (innermost loops first, so
    a value rises as far as it is invariant)."""
    readonly = _readonly_buffers(func)
    ana = index_analyzer(func)
    names = itertools.count()

    def on_for(loop, m):
        loop = m.default_mutate(loop)
        if not isinstance(loop, tirx.For) or loop.kind not in (tirx.ForKind.SERIAL, tirx.ForKind.UNROLLED):
            return loop
        return _hoist_from(loop, readonly, names, ana)

    return func.with_body(structural_mutate(func.body, [(tirx.For, on_for)]))


def _binds(stmt) -> list:
    """What a statement of a sequence binds for the statements after it (TVM 0.27's flat lets and
    buffer declarations)."""
    if isinstance(stmt, tirx.LetStmt):
        return [stmt.var]
    if isinstance(stmt, (tirx.DeclBuffer, tirx.AllocBuffer)):
        return [stmt.buffer]
    return []


def _blocks_motion(stmt) -> bool:
    """Whether a statement may end the kernel (a value computed before it might not have been)."""
    found = []
    structural_walk(stmt, lambda n: found.append(n) if isinstance(n, BLOCKING) else None)
    return bool(found)


def raise_lets(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """`func` with the parameter loads of each hoisted value (an `inv` let, `_hoist_from`) bound
    first in the statements it sits among, as early as what they read is bound; the value's math
    stays where it was. In a tensor-core kernel the epilogue's parameters (bias, batch_norm's
    statistics) are then in flight with the first operand tiles instead of starting after the
    mainloop and the staging barrier, and no instruction waits on them before it (a scoreboard wait
    in front of the tile copies would delay them). Only loads of read-only parameters move (checked
    here again, whoever made the let), so no store, barrier or async copy they cross changes what
    they read; nothing crosses a statement that may end the kernel or one that binds what a load
    reads."""
    names = itertools.count()
    readonly = _readonly_buffers(func)

    def raised_loads(value, loads: list):
        """`value` with its read-only parameters' loads replaced by variables (appended to
        `loads`); a load in the right operand of && or || runs only when the left allows it, and
        stays where it is (as `_hoist_from` leaves it)."""
        def on_load(e, m):
            return _bind_once(loads, e, f"{RAISED}{next(names)}") if _among(e.source, readonly) else e

        return structural_mutate(value, [(tirx.And, _left_operand_only), (tirx.Or, _left_operand_only),
                                         (TensorLoad, on_load)])

    def raise_into(out: list, let) -> None:
        used = []
        structural_walk(let.value, lambda n: used.append(n.source if isinstance(n, TensorLoad) else n)
                        if isinstance(n, (tirx.Var, TensorLoad)) else None)
        at = len(out)
        while at > 0 and not _blocks_motion(out[at - 1]) and not _is_raised(out[at - 1]) and not any(
                _among(b, used) for b in _binds(out[at - 1])):
            at -= 1
        out.insert(at, let)

    def on_seq(seq, m):
        seq = m.default_mutate(seq)
        if not isinstance(seq, tirx.SeqStmt):
            return seq
        out, loads = [], []  # a load two values read is bound once
        for stmt in seq.seq:
            if isinstance(stmt, tirx.LetStmt) and stmt.var.name.startswith(HOISTED):
                known = len(loads)
                value = raised_loads(stmt.value, loads)
                for v, ld in loads[known:]:
                    raise_into(out, tirx.LetStmt(v, ld))
                stmt = tirx.LetStmt(stmt.var, value)
            out.append(stmt)
        return tirx.SeqStmt(out)

    return func.with_body(structural_mutate(func.body, [(tirx.SeqStmt, on_seq)]))


def _is_raised(stmt) -> bool:
    return isinstance(stmt, tirx.LetStmt) and stmt.var.name.startswith(RAISED)


@tvm.tirx.transform.prim_func_pass(opt_level=0, name="tefuse.HoistLoopInvariants")
def HoistLoopInvariants(func, _mod, _ctx):  # noqa: N802 - TVM's pass naming
    func = hoist_loop_invariants(func)
    return raise_lets(func)


# TVM's default (s_tir) pipeline with the pass in its device part, smem_limit's check,
# int_tile_copies.py's integer tile copies before TVM's cp.async injection and byte_vectors' constants
PIPELINE = "tefuse_cuda_hoist"


def pipeline_factory(**_):
    """TVM's (main, host, device) pipelines with int_tile_copies.py's pass in the main part and the
    device part's passes: smem_limit's check, every fragment buffer lowered (warp_memory.py: a
    merged launch holds one per member), guards a loop shares tested before it
    (invariant_guards.py), the hoisting, byte_vectors' constants last."""
    _main, host, _device = sp.default_s_tir_pipeline()
    main = main_pipeline(before_async_copy=(InjectIntTileCopies,))

    def device():
        return tvm.ir.transform.Sequential([CheckDynamicShared, LowerAllWarpMemory,
                                            tirx.transform.StmtSimplify(), HoistInvariantGuards,
                                            HoistLoopInvariants, tirx.transform.LowerIntrin(), PackByteVectors])

    return main, host, device


tvm.tirx.compilation_pipeline.register_tir_pipeline(PIPELINE, pipeline_factory)
LOWERS_ALL_WARP_BUFFERS.add(PIPELINE)
