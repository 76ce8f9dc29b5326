"""The loop-invariant pass for fused epilogues: per-column math leaves the row loop; guarded,
loop-written, aliased and non-parameter values stay; the numbers do not change (run on llvm).
Each function below keeps one hazard; its test fails if the pass moves what it must not."""
from __future__ import annotations

import numpy as np
import pytest
import tvm
from tvm import tirx
from tvm.script import tirx as T
from tvm_ffi import structural_walk

from tefuse.schedules.cuda.passes.hoist import hoist_loop_invariants


@T.prim_func
def epilogue(x: T.Buffer((8, 16), "float32"), g: T.Buffer((16,), "float32"), v: T.Buffer((16,), "float32"),
             out: T.Buffer((8, 16), "float32"), acc: T.Buffer((16,), "float32")):
    T.func_attr({"tirx.noalias": True})
    for j in range(16):
        for i in range(8):
            acc[j] = acc[j] + x[i, j]
            out[i, j] = (x[i, j] * (g[j] / T.sqrt(v[j] + T.float32(1e-5)))
                         + T.if_then_else(j < 12, g[j] / v[j], T.float32(0)) + acc[j] / v[j])


def _count(stmt, pred) -> int:
    found = []
    structural_walk(stmt, lambda n: found.append(n) if pred(n) else None)
    return len(found)


def _calls(stmt, name: str) -> int:
    return _count(stmt, lambda n: isinstance(n, tvm.ir.expr.Call) and n.op.name.endswith(name))


def _lets(func) -> int:
    return _count(func.body, lambda n: isinstance(n, tirx.LetStmt))


def _loop(func, var: str):
    loops = []
    structural_walk(func.body, lambda n: loops.append(n) if isinstance(n, tirx.For) and n.loop_var.name == var else None)
    (loop,) = loops
    return loop


def _run(func, *arrays):
    args = [tvm.runtime.tensor(a) for a in arrays]
    tvm.compile(func, target="llvm")(*args)
    return [a.numpy() for a in args]


def test_per_column_math_leaves_the_row_loop_and_guarded_or_written_values_stay():
    assert _calls(_loop(epilogue, "i"), "sqrt") == 1
    hoisted = hoist_loop_invariants(epilogue)
    row = _loop(hoisted, "i")
    assert _calls(row, "sqrt") == 0  # gamma / sqrt(var + eps): once a column
    assert _calls(row, "if_then_else") == 1  # the guarded division stays under its guard
    text = hoisted.script()
    assert "acc[j] / inv" in text  # acc is written in the loop: its load stays; v[j] alone is bound once
    assert text.index("inv0") < text.index("for i")


def test_the_hoisted_function_computes_the_same_numbers():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 16)).astype("float32")
    g = rng.standard_normal(16).astype("float32")
    v = rng.uniform(0.5, 2, 16).astype("float32")
    outs = [_run(f, x, g, v, np.zeros((8, 16), "float32"), np.zeros(16, "float32"))[3]
            for f in (epilogue, hoist_loop_invariants(epilogue))]
    np.testing.assert_array_equal(outs[0], outs[1])
    ref = x * (g / np.sqrt(v + 1e-5)) + np.where(np.arange(16) < 12, g / v, 0) + np.cumsum(x, 0) / v
    np.testing.assert_allclose(outs[1], ref, rtol=1e-5, atol=1e-5)


def test_without_noalias_no_load_moves():
    assert _lets(hoist_loop_invariants(epilogue.without_attr("tirx.noalias"))) == 0


@T.prim_func
def synced(x: T.Buffer((8, 16), "float32"), v: T.Buffer((16,), "float32"), out: T.Buffer((8, 16), "float32")):
    T.func_attr({"tirx.noalias": True})
    for j in range(16):
        for i in range(8):
            T.evaluate(T.tvm_storage_sync("shared"))
            out[i, j] = x[i, j] / T.sqrt(v[j])


@T.prim_func
def in_while(x: T.Buffer((16,), "float32"), out: T.Buffer((8,), "float32"), n: T.int64):
    T.func_attr({"tirx.noalias": True})
    for i in range(8):
        while out[i] < T.float32(0):
            out[i] = out[i] + x[n] / T.float32(2)


@T.prim_func
def after_assert(x: T.Buffer((16,), "float32"), out: T.Buffer((8,), "float32"), n: T.int64):
    T.func_attr({"tirx.noalias": True})
    for i in range(8):
        assert n < T.int64(16), "n out of range"
        out[i] = x[n] / T.float32(2)


@T.prim_func
def in_loop_that_may_not_run(x: T.Buffer((16,), "float32"), out: T.Buffer((8,), "float32"), n: T.int64, m: T.int32):
    T.func_attr({"tirx.noalias": True})
    for i in range(8):
        for k in range(m):
            out[i] = out[i] + x[n] / T.float32(2)


@T.prim_func
def in_empty_loop(x: T.Buffer((16,), "float32"), out: T.Buffer((8,), "float32"), n: T.int64):
    T.func_attr({"tirx.noalias": True})
    for i in range(8):
        for k in range(0):
            out[i] = out[i] + x[n] / T.float32(2)


@T.prim_func
def under_if(x: T.Buffer((16,), "float32"), out: T.Buffer((8,), "float32"), n: T.int64):
    T.func_attr({"tirx.noalias": True})
    for i in range(8):
        if n < T.int64(16):
            out[i] = x[n] / T.float32(2)


@T.prim_func
def through_a_view(x: T.Buffer((16,), "float32"), out: T.Buffer((8,), "float32")):
    T.func_attr({"tirx.noalias": True})
    y = T.decl_buffer((16,), "float32", data=x.data)  # a second view of x's memory, written in the loop
    for i in range(8):
        y[0] = T.float32(i)
        out[i] = x[0] / T.float32(2)


@T.prim_func
def declared_in_the_loop(x: T.Buffer((16,), "float32"), out: T.Buffer((8,), "float32")):
    T.func_attr({"tirx.noalias": True})
    for i in range(8):
        y = T.decl_buffer((16,), "float32", data=x.data)
        out[i] = y[0] / T.float32(2)


@T.prim_func
def through_an_address(x: T.Buffer((16,), "float32"), out: T.Buffer((8,), "float32")):
    T.func_attr({"tirx.noalias": True})
    y = T.decl_buffer((16,), "float32", data=T.address_of(x[0]))  # a view made from an element's address
    for i in range(8):
        y[0] = T.float32(i)
        out[i] = x[0] / T.float32(2)


@T.prim_func
def right_of_and(x: T.Buffer((16,), "float32"), out: T.Buffer((8,), "float32"), n: T.int64):
    T.func_attr({"tirx.noalias": True})
    for i in range(8):  # C's &&: x[n] is read only when n < 16
        out[i] = T.Select(T.And(n < T.int64(16), x[n] / T.float32(2) > T.Cast("float32", i)),
                          T.float32(1), T.float32(0))


@T.prim_func
def past_a_column_guard(x: T.Buffer((8, 16), "float32"), g: T.Buffer((12,), "float32"), out: T.Buffer((8, 16), "float32")):
    T.func_attr({"tirx.noalias": True})
    for j in range(16):
        for i in range(8):
            if j < 12:  # g[j] exists only where the guard holds: it may not be read outside it
                out[i, j] = x[i, j] / T.sqrt(g[j])


@pytest.mark.parametrize("func", [synced, in_while, after_assert, in_loop_that_may_not_run, in_empty_loop, under_if,
                                  through_a_view, declared_in_the_loop, through_an_address, right_of_and,
                                  past_a_column_guard],
                         ids=lambda f: f.attrs["global_symbol"])
def test_nothing_moves_across_a_barrier_a_guard_or_an_alias(func):
    assert _lets(hoist_loop_invariants(func)) == 0


@pytest.mark.parametrize("func", [through_a_view, through_an_address], ids=lambda f: f.attrs["global_symbol"])
def test_a_view_written_in_the_loop_keeps_the_numbers(func):
    x = np.full(16, 7, "float32")
    outs = [_run(f, x.copy(), np.zeros(8, "float32"))[1] for f in (func, hoist_loop_invariants(func))]
    np.testing.assert_array_equal(outs[0], outs[1])
    assert outs[0][3] == 1.5  # x[0] was set to i = 3 (through the view) before the division


@T.prim_func
def strided(x: T.Buffer((16,), "float32"), v: T.Buffer((1,), "float32"), out: T.Buffer((16,), "float32")):
    T.func_attr({"tirx.noalias": True})
    for i in T.serial(0, 16, step=2):
        out[i] = x[i] / T.sqrt(v[0])


def test_a_strided_loop_keeps_its_step():
    hoisted = hoist_loop_invariants(strided)
    assert _lets(hoisted) == 1
    x = np.arange(16, dtype="float32")
    outs = [_run(f, x, np.full(1, 4, "float32"), np.zeros(16, "float32"))[2] for f in (strided, hoisted)]
    np.testing.assert_array_equal(outs[0], outs[1])
    assert outs[1][1] == 0 and outs[1][2] == 1


@T.prim_func
def addressed(x: T.Buffer((16,), "float32"), out: T.Buffer((8,), "float32")):
    T.func_attr({"tirx.noalias": True})
    for i in range(8):
        out[i] = T.call_pure_extern("float32", "load_at", T.address_of(x[3])) / T.Cast("float32", i + 1)


def test_an_address_is_left_whole():
    """x[3] is a read-only parameter's load, but under address_of it is an address, not a value."""
    hoisted = hoist_loop_invariants(addressed)
    assert "T.address_of(x[3])" in hoisted.script() and _lets(hoisted) == 0


@T.prim_func
def row_guarded(x: T.Buffer((8, 16), "float32"), g: T.Buffer((16,), "float32"), v: T.Buffer((16,), "float32"),
                out: T.Buffer((8, 16), "float32"), m: T.int32):
    T.func_attr({"tirx.noalias": True})
    for j in range(16):
        for i in range(8):
            if i < m:  # a padded tail's row guard: the channel's statistics are in bounds whatever it says
                out[i, j] = x[i, j] * (g[j] / T.sqrt(v[j] + T.float32(1e-5)))


def test_per_column_math_leaves_a_row_guard_when_its_loads_are_in_bounds():
    """A tensor-core epilogue's padded rows put its store under `if (row < M)`; the per-channel
    scale reads g[j] and v[j], inside their buffers for every j the loop takes, so it is computed
    once a column; past_a_column_guard's g[j] (j up to 15, g of 12) stays under its guard."""
    hoisted = hoist_loop_invariants(row_guarded)
    assert _calls(_loop(hoisted, "i"), "sqrt") == 0 and _lets(hoisted) == 1
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 16)).astype("float32")
    g = rng.standard_normal(16).astype("float32")
    v = rng.uniform(0.5, 2, 16).astype("float32")
    outs = []
    for f in (row_guarded, hoisted):
        args = [tvm.runtime.tensor(a) for a in (x, g, v, np.zeros((8, 16), "float32"))]
        tvm.compile(f, target="llvm")(*args, 5)
        outs.append(args[3].numpy())
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_allclose(outs[1][:5], x[:5] * (g / np.sqrt(v + 1e-5)), rtol=1e-6)
    assert not outs[1][5:].any()


# ---------------------------------------------------------------- raise_lets: loads go first
@T.prim_func
def after_a_mainloop(x: T.Buffer((8, 16), "float32"), g: T.Buffer((16,), "float32"), v: T.Buffer((16,), "float32"),
                     acc: T.Buffer((8, 16), "float32"), out: T.Buffer((8, 16), "float32")):
    """A kernel's shape: a reduction written to a scratch tile, a barrier, then the epilogue's
    row loop reading the per-column statistics (one column per `j`, as a thread's lanes are)."""
    T.func_attr({"tirx.noalias": True})
    for j in range(16):
        for i in range(8):
            acc[i, j] = x[i, j] * T.float32(2)
        T.tvm_storage_sync("shared")
        for i in range(8):
            out[i, j] = acc[i, j] * (g[j] / T.sqrt(v[j] + T.float32(1e-5)))


def _stmts(func, var: str):
    """The statements of loop `var`'s body, in order."""
    body = _loop(func, var).body
    return list(body.seq) if isinstance(body, tirx.SeqStmt) else [body]


def test_the_parameter_loads_go_before_the_mainloop_and_the_math_stays():
    from tefuse.schedules.cuda.passes.hoist import RAISED, raise_lets

    hoisted = hoist_loop_invariants(after_a_mainloop)
    raised = raise_lets(hoisted)
    stmts = _stmts(raised, "j")
    kinds = [("let:" + s.var.name) if isinstance(s, tirx.LetStmt) else type(s).__name__ for s in stmts]
    # g[j] and v[j] first, then the reduction loop and the barrier, then the scale (sqrt, divide), the row loop
    assert [k.split(":")[-1][:len(RAISED)] for k in kinds[:2]] == [RAISED, RAISED], kinds
    assert isinstance(stmts[2], tirx.For) and _calls(stmts[3], "storage_sync") == 1, kinds
    assert kinds[4].startswith("let:inv") and _calls(stmts[4], "sqrt") == 1, kinds
    assert _calls(stmts[0], "sqrt") == 0 and _count(stmts[0].value, lambda n: isinstance(n, tvm.ir.expr.TensorLoad)) == 1


def test_raised_loads_compute_the_same_numbers():
    from tefuse.schedules.cuda.passes.hoist import raise_lets

    rng = np.random.default_rng(2)
    x = rng.standard_normal((8, 16)).astype("float32")
    g = rng.standard_normal(16).astype("float32")
    v = rng.uniform(0.5, 2, 16).astype("float32")
    raised = raise_lets(hoist_loop_invariants(epilogue))
    assert _lets(raised) > _lets(hoist_loop_invariants(epilogue))
    outs = [_run(f, x, g, v, np.zeros((8, 16), "float32"), np.zeros(16, "float32"))[3] for f in (epilogue, raised)]
    np.testing.assert_array_equal(outs[0], outs[1])


@T.prim_func
def after_an_assert(x: T.Buffer((8, 16), "float32"), g: T.Buffer((16,), "float32"), out: T.Buffer((8, 16), "float32"),
                    m: T.int32):
    T.func_attr({"tirx.noalias": True})
    for j in range(16):
        T.evaluate(T.float32(0))
        assert m > 0, "m"
        for i in range(8):
            out[i, j] = x[i, j] / T.sqrt(g[j])


def test_a_load_does_not_rise_past_a_statement_that_may_end_the_kernel():
    from tefuse.schedules.cuda.passes.hoist import RAISED, raise_lets

    stmts = _stmts(raise_lets(hoist_loop_invariants(after_an_assert)), "j")
    first = next(i for i, s in enumerate(stmts) if isinstance(s, tirx.LetStmt) and s.var.name.startswith(RAISED))
    assert _count(tirx.SeqStmt(stmts[:first]), lambda n: isinstance(n, tirx.AssertStmt)) == 1


def test_the_pass_raises_the_parameter_loads_that_hoisting_left_in_place():
    from tefuse.schedules.cuda.passes.hoist import HoistLoopInvariants, hoist_loop_invariants

    early = HoistLoopInvariants(tvm.IRModule({"main": after_a_mainloop}))["main"]
    hoisted_only = hoist_loop_invariants(after_a_mainloop)
    assert _lets(early) == _lets(hoisted_only) + 2 and _lets(hoisted_only) == 1


def test_a_wgmma_dense_loads_its_bias_before_its_first_tile_copy():
    """The generated CUDA of a dense + bias + ReLU on wgmma (256 x 128 x 256, 64x128 tiles): the
    bias is read before the first cp.async (without the raising, after the last wgmma)."""
    from tests.schedules.cuda.gemm.test_mma import _dense
    from tests.schedules.cuda.gemm.test_wgmma import _cuda_source

    src = _cuda_source(_dense(256, 128, 256, "float16"), 64, 128)
    kernel = src[src.index("__global__"):]
    bias, copy = kernel.index("bias_ptr +"), kernel.index("cp_async")
    assert bias < copy


@T.prim_func
def after_a_let(x: T.Buffer((8, 16), "float32"), g: T.Buffer((16,), "float32"), out: T.Buffer((8, 16), "float32")):
    T.func_attr({"tirx.noalias": True})
    for j in range(8):
        T.evaluate(T.float32(0))
        k = T.bind(j * 2)
        for i in range(8):
            out[i, k] = x[i, k] * (g[k] / T.sqrt(g[k] + T.float32(1))) * T.Select(
                T.And(j < 6, g[k + 1] > T.float32(0)), g[k], T.float32(2))


def test_a_load_stays_below_the_let_it_reads_and_out_of_a_right_operand():
    """g[k] cannot rise above `k = j * 2`; g[k + 1] under `j < 6 &&` is left in the value (it
    runs only when j < 6 holds), while the raised g[k] is bound once for its two uses."""
    from tefuse.schedules.cuda.passes.hoist import RAISED, raise_lets

    stmts = _stmts(raise_lets(hoist_loop_invariants(after_a_let)), "j")
    names = [("let:" + s.var.name) if isinstance(s, tirx.LetStmt) else type(s).__name__ for s in stmts]
    k_at = names.index("let:k")
    raised = [i for i, n in enumerate(names) if n.startswith("let:" + RAISED)]
    assert raised == [k_at + 1], names
    ands = []
    structural_walk(tirx.SeqStmt(stmts), lambda n: ands.append(n) if isinstance(n, tirx.And) else None)
    assert len(ands) == 1 and _count(ands[0].b, lambda n: isinstance(n, tvm.ir.expr.TensorLoad)) == 1
