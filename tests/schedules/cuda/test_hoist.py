"""The loop-invariant pass for fused epilogues: per-column math leaves the row loop, guarded and
loop-written values stay, and the numbers do not change (run on llvm)."""
from __future__ import annotations

import numpy as np
import tvm
from tvm import tirx
from tvm.script import tirx as T
from tvm_ffi import structural_walk

from tefuse.schedules.cuda.hoist import hoist_loop_invariants


@T.prim_func
def epilogue(x: T.Buffer((8, 16), "float32"), g: T.Buffer((16,), "float32"), v: T.Buffer((16,), "float32"),
             out: T.Buffer((8, 16), "float32"), acc: T.Buffer((16,), "float32")):
    for j in range(16):
        for i in range(8):
            acc[j] = acc[j] + x[i, j]
            out[i, j] = (x[i, j] * (g[j] / T.sqrt(v[j] + T.float32(1e-5)))
                         + T.if_then_else(j < 12, g[j] / v[j], T.float32(0)) + acc[j] / v[j])


def _calls_in(stmt, name: str) -> int:
    found = []
    structural_walk(stmt, lambda n: found.append(n) if isinstance(n, tvm.ir.expr.Call)
                    and n.op.name.endswith(name) else None)
    return len(found)


def _row_loop(func):
    loops = []
    structural_walk(func.body, lambda n: loops.append(n) if isinstance(n, tirx.For) and n.loop_var.name == "i" else None)
    (row,) = loops
    return row


def test_per_column_math_leaves_the_row_loop_and_guarded_or_written_values_stay():
    row = _row_loop(epilogue)
    assert _calls_in(row, "sqrt") == 1
    hoisted = hoist_loop_invariants(epilogue)
    row = _row_loop(hoisted)
    assert _calls_in(row, "sqrt") == 0  # gamma / sqrt(var + eps): once a column
    assert _calls_in(row, "if_then_else") == 1  # the guarded division stays under its guard
    text = hoisted.script()
    assert "acc[j] / inv" in text  # acc is written in the loop: its load stays; v[j] alone is bound once
    assert "inv0" in text and text.index("inv0") < text.index("for i")


def test_the_hoisted_function_computes_the_same_numbers():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 16)).astype("float32")
    g = rng.standard_normal(16).astype("float32")
    v = rng.uniform(0.5, 2, 16).astype("float32")
    outs = []
    for func in (epilogue, hoist_loop_invariants(epilogue)):
        f = tvm.compile(func, target="llvm")
        out = tvm.runtime.tensor(np.zeros((8, 16), "float32"))
        acc = tvm.runtime.tensor(np.zeros(16, "float32"))
        f(*(tvm.runtime.tensor(a) for a in (x, g, v)), out, acc)
        outs.append(out.numpy())
    np.testing.assert_array_equal(outs[0], outs[1])
    ref = x * (g / np.sqrt(v + 1e-5)) + np.where(np.arange(16) < 12, g / v, 0) + np.cumsum(x, 0) / v
    np.testing.assert_allclose(outs[1], ref, rtol=1e-5, atol=1e-5)


def test_a_loop_with_a_barrier_is_left_alone():
    @T.prim_func
    def synced(x: T.Buffer((8, 16), "float32"), v: T.Buffer((16,), "float32"), out: T.Buffer((8, 16), "float32")):
        for j in range(16):
            for i in range(8):
                T.evaluate(T.tvm_storage_sync("shared"))
                out[i, j] = x[i, j] / T.sqrt(v[j])

    assert _calls_in(_row_loop(hoist_loop_invariants(synced)), "sqrt") == 1
