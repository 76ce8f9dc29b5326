"""The float8 row sums of a wgmma k loop with a batch in flight (schedules/cuda/passes/row_sums.py)
without a GPU: on kernels shaped as TVM's software pipeline leaves them (a serial k loop, short
unrolled loops, calls before it), the rewritten calls, run in order against a model of wgmma's
batches (`wait_group 1` retires all but the newest), add every row exactly once and only once
retired, never issue into a half whose sum is still to be added, and leave no batch in flight
across a loop's back edge (ptxas would serialize the wgmma); real float8 kernels of several
depths and stage counts assemble with ptxas without serializing or spilling."""
from __future__ import annotations

import re

import pytest
import tvm
from tvm import tirx
from tvm.script import tirx as T

import tefuse
from tefuse.bench.forced_config import ForcedConfig
from tefuse.codegen.ptx import compile_to_ptx, ptxas_report
from tefuse.schedules.cuda.intrin.wgmma import WAIT_ALL
from tefuse.schedules.cuda.passes import row_sums

from tests.schedules.cuda.gemm.test_wgmma_8bit import _fp8_dense

NAME = "tefuse_wgmma_m64n16k32x4_e4m3_s3_rowsum"


def _kernel(parts):
    """A kernel of `parts`: ("loop", extent) a serial loop around one product call, ("unrolled",
    extent) an unrolled one, ("call",) a call alone; the accumulators stored after."""
    acc = tirx.decl_buffer([8], "float32", "acc", scope="local")
    zero = tirx.IntImm("int32", 0)

    def call():
        return tirx.Evaluate(T.cuda.func_call(NAME, T.address_of(tirx.BufferLoad(acc, [zero])), zero, zero,
                                              source_code="// product"))

    stmts = [tirx.AllocBuffer(acc)]
    for i, (kind, *extent) in enumerate(parts):
        if kind == "call":
            stmts.append(call())
            continue
        k = tirx.Var(f"k{i}", "int32")
        # a guard TVM's pipeline leaves, true for every iteration
        body = tirx.IfThenElse(k < extent[0] + 4, tirx.SeqStmt([tirx.Evaluate(k), call()]), None)
        stmts.append(tirx.For(k, 0, extent[0], tirx.ForKind.UNROLLED if kind == "unrolled" else tirx.ForKind.SERIAL,
                              body))
    stmts.append(tirx.BufferStore(acc, tirx.FloatImm("float32", 0.0), [zero]))
    return tirx.PrimFunc([], tirx.SeqStmt(stmts)), sum(1 if p[0] == "call" else p[1] for p in parts)


def _name(stmt):
    v = stmt.value
    return v.args[0].value if isinstance(v, tvm.ir.Call) and v.op.name == row_sums.FUNC_CALL else None


def _run(stmt, out, loop_ends):
    """The rewritten calls' names in execution order; for each serial loop, whether the last call
    of its body waits for its own row."""
    if isinstance(stmt, tirx.SeqStmt):
        for s in stmt.seq:
            _run(s, out, loop_ends)
    elif isinstance(stmt, tirx.AttrStmt):
        _run(stmt.body, out, loop_ends)
    elif isinstance(stmt, tirx.IfThenElse):
        _run(stmt.then_case, out, loop_ends)
    elif isinstance(stmt, tirx.For):
        start = len(out)
        for _ in range(int(stmt.extent)):
            _run(stmt.body, out, loop_ends)
        if len(out) > start:
            loop_ends.append(out[-1])
    elif isinstance(stmt, tirx.Evaluate) and _name(stmt):
        out.append(_name(stmt))
    elif isinstance(stmt, tirx.BufferStore) and stmt.buffer.name == "acc":
        out.append("store")


def _simulate(calls, rows):
    """Run the calls against wgmma's batches; every row added once, after it retired."""
    in_flight = []  # (half, row), oldest first
    holds = {0: None, 1: "zero"}  # what each half holds until added: a row, or the init's zeros
    added, row = [], 0
    for name in calls:
        if name == "store":  # the accumulators read: every row added by then
            assert sorted(added) == list(range(rows)) and not in_flight, (added, in_flight)
            continue
        if name == WAIT_ALL:
            in_flight.clear()
            continue
        drain = re.fullmatch(r"tefuse_wgmma_rowsum_drain_n16_h(\d)", name)
        if drain:
            in_flight.clear()
            half = int(drain.group(1))
            assert isinstance(holds[half], int), f"the drain adds half {half}, which holds {holds[half]}"
            added.append(holds[half])
            holds[half] = None
            continue
        if name == "tefuse_wgmma_rowsum_init_n16":
            continue
        m = re.fullmatch(rf"{NAME}_h(\d)(_w)?", name)
        assert m, name
        half, other = int(m.group(1)), 1 - int(m.group(1))
        assert holds[half] is None, f"row {row} into half {half}, whose row {holds[half]} was never added"
        assert all(h != half for h, _ in in_flight), f"row {row} into half {half} while a batch there runs"
        holds[half] = row
        in_flight.append((half, row))
        del in_flight[:-1]  # wait_group 1
        assert holds[other] is not None, f"row {row} adds half {other}, which holds nothing"
        if holds[other] != "zero":
            added.append(holds[other])
        holds[other] = None
        if m.group(2):
            in_flight.clear()
        row += 1
    assert row == rows and calls[-1] == "store"
    assert sorted(added) == list(range(rows)), added
    assert holds == {0: None, 1: None}


CASES = {
    "pipeline": [("loop", 62), ("unrolled", 2)],
    "odd-loop": [("loop", 7), ("unrolled", 3)],
    "call-before-an-odd-start": [("call",), ("loop", 9), ("unrolled", 2)],
    "calls-before-an-even-start": [("call",), ("call",), ("loop", 6)],
    "short-loop": [("loop", 2), ("unrolled", 2)],
    "loop-alone": [("loop", 5)],
}


@pytest.mark.parametrize("group", [2, 4])
@pytest.mark.parametrize("case", CASES)
def test_rows_are_added_once_each_and_no_batch_crosses_a_back_edge(case, group, monkeypatch):
    monkeypatch.setattr(row_sums, "ROW_GROUP", group)
    func, rows = _kernel(CASES[case])
    out = row_sums.inject(func)
    calls, loop_ends = [], []
    _run(out.body, calls, loop_ends)
    _simulate(calls, rows)
    assert all(name.endswith("_w") for name in loop_ends), loop_ends
    # the sums are allocated once, in the kernel's sequence (not in a loop), before the first call
    (alloc,) = [s for s in out.body.seq if isinstance(s, tirx.AllocBuffer) and s.buffer.name == "row_sums"]
    assert out.body.seq.index(alloc) == 1 and int(alloc.buffer.shape[0]) == 16


def test_a_kernel_without_row_sum_calls_is_left_alone():
    acc = tirx.decl_buffer([8], "float32", "acc", scope="local")
    func = tirx.PrimFunc([], tirx.SeqStmt([tirx.AllocBuffer(acc), tirx.Evaluate(T.cuda.func_call(
        "tefuse_wgmma_m64n16k32x4_e4m3", T.address_of(tirx.BufferLoad(acc, [tirx.IntImm("int32", 0)])),
        source_code="//"))]))
    assert row_sums.inject(func).same_as(func)


def test_calls_in_nested_loops_are_refused():
    """One drain after the sequence: a k loop inside an outer loop that stores the accumulators
    each iteration would store before its last row is added."""
    acc = tirx.decl_buffer([8], "float32", "acc", scope="local")
    zero = tirx.IntImm("int32", 0)
    call = tirx.Evaluate(T.cuda.func_call(NAME, T.address_of(tirx.BufferLoad(acc, [zero])), zero, zero,
                                          source_code="//"))
    k, b = tirx.Var("k", "int32"), tirx.Var("b", "int32")
    inner = tirx.For(k, 0, 4, tirx.ForKind.SERIAL, call)
    outer = tirx.For(b, 0, 4, tirx.ForKind.SERIAL,
                     tirx.SeqStmt([inner, tirx.BufferStore(acc, tirx.FloatImm("float32", 0.0), [zero])]))
    func = tirx.PrimFunc([], tirx.SeqStmt([tirx.AllocBuffer(acc), outer, tirx.Evaluate(0)]))
    with pytest.raises(ValueError, match="nested loops"):
        row_sums.inject(func)


def test_a_call_under_a_run_time_condition_is_refused():
    acc = tirx.decl_buffer([8], "float32", "acc", scope="local")
    n = tirx.Var("n", "int32")
    zero = tirx.IntImm("int32", 0)
    call = tirx.Evaluate(T.cuda.func_call(NAME, T.address_of(tirx.BufferLoad(acc, [zero])), zero, zero,
                                          source_code="//"))
    func = tirx.PrimFunc([n], tirx.SeqStmt([tirx.AllocBuffer(acc), tirx.IfThenElse(n > 3, call, None), call]))
    with pytest.raises(ValueError, match="condition not known when compiling"):
        row_sums.inject(func)


@pytest.mark.parametrize("k,tile,stages", [(384, (64, 128, 32, 64), 3), (1152, (64, 128, 32, 64), 4),
                                            (2048, (128, 128, 64, 64), 3), (1280, (128, 64, 64, 32), 4)])
def test_float8_kernels_keep_their_wgmma_asynchronous(k, tile, stages):
    """Depths of 3, 9, 16 and 10 rows, 3 and 4 stages: ptxas neither serializes the wgmma nor
    spills (the 128x128 tile holds 3 x 64 floats of accumulators and row sums a thread)."""
    cfg = {"tile": tile, "bk": 128, "stages": stages, "intrin": "wgmma", "vec_out": 4, "slices": 1}
    (kern,) = tefuse.build(_fp8_dense(256, 256, k), "cuda:sm_90", db=ForcedConfig(cfg), cache=None).kernels
    src = kern.source("cuda")
    assert "rowsum_drain" in src
    report = ptxas_report(compile_to_ptx(src, "sm_90a"))
    assert not report.wgmma_serialized and report.spill_bytes == report.stack_bytes == 0, report.text
    assert 0 < report.registers <= 255
