"""The row sums of a float8 wgmma k loop that keeps a batch in flight (intrin/wgmma.py).

Each 128-deep row of float8 products is summed apart and then added to the float32
accumulators (intrin/wgmma.promotes). Waiting for each row before adding it leaves the tensor
cores idle for the wait, the adds and the next step's barrier: an 8192^3 GEMM took 1.55x the time
of the same kernel in int8 (H200). Here row k goes into one half of a thread's row sums while row
k-1's, in the other half, is waited for and added; rows alternate between the halves. The last
row of each loop iteration also waits for itself, because ptxas serializes all the wgmma of a
loop that reads a batch's accumulators after the loop's back edge (intrin/wgmma._row_sum), so
the k loop is unrolled by ROW_GROUP rows and the tensor cores idle once a group. The sums
outlive each call of the device function, which a tensor intrinsic cannot allocate, and the half
a call takes must be a constant for the sums to stay registers. So after TVM has lowered the
blocks, `inject`
- numbers the product calls in program order: a loop around one (the pipelined k loop) is
  unrolled by ROW_GROUP (even, so each iteration starts on the same half), the iterations left
  over written out after it, all batches waited for before it; the pipeline's short loops
  (prologue, epilogue) are written out; each call then names its variant (`row_sum_variant`:
  half = its number's parity, waiting for its own row where it ends a loop iteration) and gets
  the sums;
- allocates the sums (float32 [n], local) and zeroes the half the first row adds
  (`row_sum_init`) before the statement of the lowest sequence that holds every product call;
- adds the last row's sum after the last statement that holds a product call
  (`row_sum_drain`), before the accumulators are stored.
"""
from __future__ import annotations

import tvm
from tvm import sym, tirx
from tvm.script import tirx as T
from tvm_ffi import structural_equal, structural_map, structural_mutate, structural_walk

from ..intrin.wgmma import WAIT_ALL, WAIT_ALL_SOURCE, row_sum_drain, row_sum_init, row_sum_lanes, row_sum_variant

FUNC_CALL = "tirx.cuda.func_call"
ROW_GROUP = 2  # rows a k-loop iteration after unrolling (even)


def _row_sum_call(node) -> bool:
    """Whether `node` (an Evaluate) calls a device function that takes row sums."""
    v = node.value
    return (isinstance(v, tvm.ir.Call) and v.op.name == FUNC_CALL and isinstance(v.args[0], tvm.ir.StringImm)
            and row_sum_lanes(v.args[0].value) is not None)


def _calls(stmt) -> list:
    found = []
    structural_walk(stmt, [(tirx.Evaluate, lambda n: found.append(n) if _row_sum_call(n) else None)])
    return found


def _call(name: str, source: str, *args):
    return tirx.Evaluate(T.cuda.func_call(name, *args, source_code=source))


def _seq(stmts):
    """One statement of `stmts`, nested sequences flattened (TVM's SeqStmt holds none)."""
    flat = []
    for st in stmts:
        flat.extend(st.seq if isinstance(st, tirx.SeqStmt) else [st])
    return flat[0] if len(flat) == 1 else tirx.SeqStmt(flat or [tirx.Evaluate(0)])


def _const(e, what: str) -> int:
    e = sym.Analyzer().simplify(e)
    if not isinstance(e, tirx.IntImm):
        raise ValueError(f"row sums: a product call in a loop whose {what} is not a constant ({e})")
    return int(e.value)


def _at(body, var, value):
    """`body` with loop variable `var` replaced by `value`."""
    return structural_map(body, (tirx.Var, lambda v: value if v.same_as(var) else v))


class _Numbering:
    """Rewrites the product calls of a statement in program order, each as the variant its
    number's parity names (see the module docstring); `count` is the calls so far."""

    def __init__(self, t_ptr) -> None:
        self.t_ptr, self.count = t_ptr, 0
        self.analyzer = sym.Analyzer()

    def __call__(self, stmt, own: bool = False):
        """`stmt` numbered; `own`: its last call waits for its own row."""
        if not _calls(stmt):
            return stmt
        if isinstance(stmt, tirx.Evaluate):
            name, d, *operands, source = stmt.value.args  # (the source code is the last argument)
            half, self.count = self.count % 2, self.count + 1
            return _call(row_sum_variant(name.value, half, own), source.value, d, self.t_ptr, *operands)
        if isinstance(stmt, tirx.SeqStmt):
            holds = [bool(_calls(s)) for s in stmt.seq]
            last = max(i for i, h in enumerate(holds) if h)
            return _seq([self(s, own and i == last) for i, s in enumerate(stmt.seq)])
        if isinstance(stmt, tirx.AttrStmt):
            return tirx.AttrStmt(stmt.node, stmt.attr_key, stmt.value, self(stmt.body, own))
        if isinstance(stmt, tirx.IfThenElse):
            cond = self.analyzer.simplify(stmt.condition)
            if not isinstance(cond, tirx.IntImm):
                raise ValueError(f"row sums: a product call under a condition not known when compiling ({cond})")
            branch = stmt.then_case if cond.value else stmt.else_case
            return self(branch, own) if branch is not None else tirx.Evaluate(0)
        if isinstance(stmt, tirx.For):
            return self._loop(stmt, own)
        raise ValueError(f"row sums: a product call inside a {type(stmt).__name__}")

    def _written_out(self, loop, first: int, stop: int, own: bool) -> list:
        return [self(_at(loop.body, loop.loop_var, tirx.IntImm(loop.loop_var.ty.dtype, i)), own and i == stop - 1)
                for i in range(first, stop)]

    def _loop(self, loop, own: bool):
        if loop.step is not None and _const(loop.step, "step") != 1:
            raise ValueError("row sums: a product call in a loop of step other than 1")
        if loop.kind not in (tirx.ForKind.SERIAL, tirx.ForKind.UNROLLED):
            raise ValueError(f"row sums: a product call in a {loop.kind.name.lower()} loop")
        inner = []
        structural_walk(loop.body, [(tirx.For, lambda n: inner.append(n) if _calls(n) else None)])
        if inner:  # one drain after the sequence: an outer loop around a k loop would store before it
            raise ValueError("row sums: product calls in nested loops")
        lo, extent = _const(loop.min, "start"), _const(loop.extent, "extent")
        if loop.kind == tirx.ForKind.UNROLLED or extent <= ROW_GROUP:
            return _seq(self._written_out(loop, lo, lo + extent, own))
        if len(_calls(loop.body)) != 1:
            raise ValueError(f"row sums: a loop of {len(_calls(loop.body))} product calls an iteration")
        # no batch enters the loop in flight (the rows before it: the pipeline's prologue has none)
        stmts = [_call(WAIT_ALL, WAIT_ALL_SOURCE)] if self.count else []
        groups = extent // ROW_GROUP
        o = tirx.Var(f"{loop.loop_var.name}_group", loop.loop_var.ty.dtype)
        self.analyzer.bind(o, tvm.ir.Range(0, groups))
        # an even group: each iteration starts on the half the first one did
        body = _seq([self(_at(loop.body, loop.loop_var, lo + ROW_GROUP * o + j), j == ROW_GROUP - 1)
                     for j in range(ROW_GROUP)])
        self.count += ROW_GROUP * (groups - 1)
        stmts.append(tirx.For(o, 0, groups, tirx.ForKind.SERIAL, body, annotations=loop.annotations))
        stmts += self._written_out(loop, lo + ROW_GROUP * groups, lo + extent, own)
        return _seq(stmts)


def inject(func):
    """`func` with its row-sum calls (if any) given their sums: see the module docstring.
    ValueError where the calls differ in function or accumulators, or their rows cannot be
    numbered when compiling."""
    calls = _calls(func.body)
    if not calls:
        return func
    names = {c.value.args[0].value for c in calls}
    if len(names) > 1:
        raise ValueError(f"row sums: one kernel calls {len(names)} row-sum functions ({', '.join(sorted(names))})")
    acc = calls[0].value.args[1]
    if not all(structural_equal(c.value.args[1], acc) for c in calls):
        raise ValueError("row sums: the calls add to different accumulators")
    n = row_sum_lanes(names.pop())
    sums = tirx.decl_buffer([n], "float32", "row_sums", scope="local")
    t_ptr = T.address_of(tirx.BufferLoad(sums, [tirx.IntImm("int32", 0)]))
    total, done = len(calls), []

    def on_seq(node, m):
        holds = [len(_calls(s)) for s in node.seq]
        node = m.default_mutate(node)
        if done or sum(holds) != total:  # the lowest sequence that holds every call: once
            return node
        first = next(i for i, h in enumerate(holds) if h)
        last = max(i for i, h in enumerate(holds) if h)
        numbering = _Numbering(t_ptr)
        rows = [numbering(s) for s in node.seq[first:last + 1]]
        done.append(numbering.count)
        return _seq([*node.seq[:first], tirx.AllocBuffer(sums), _call(*row_sum_init(n), t_ptr), *rows,
                     _call(*row_sum_drain(n, (numbering.count - 1) % 2), acc, t_ptr), *node.seq[last + 1:]])

    # a loop's calls are numbered with the sequence around it, not inside it
    body = structural_mutate(func.body, [(tirx.SeqStmt, on_seq), (tirx.For, lambda node, _m: node)])
    if not done:
        raise ValueError("row sums: no statement sequence holds every row-sum call")
    # the written-out iterations define their inner loops' variables again
    mod = tirx.transform.ConvertSSA()(tvm.IRModule({"main": func.with_body(body)}))
    return mod["main"]


@tvm.tirx.transform.prim_func_pass(opt_level=0, name="tefuse.InjectRowSums")
def InjectRowSums(func, _mod, _ctx):  # noqa: N802 - TVM's pass naming
    return inject(func)
