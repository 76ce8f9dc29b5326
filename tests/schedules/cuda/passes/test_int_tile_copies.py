"""Masked integer tile copies made predicated cp.async (passes/int_tile_copies.py), on TIR."""
from __future__ import annotations

from tvm import tirx
from tvm.ir.expr import Call
from tvm.script import tirx as T
from tvm_ffi import structural_equal, structural_walk

from tefuse.schedules.cuda.passes.int_tile_copies import inject_int_tile_copies


def _copy(dtype: str, lanes: int, fill, async_scope: bool = True):
    """One thread's tile copy: rows past 3 masked (a GEMM's tail), then a padding guard with `fill`."""
    fill, zero = tirx.const(fill, dtype), tirx.const(0, dtype)

    @T.prim_func
    def f(a: T.Buffer((256,), dtype), s: T.Buffer((256,), dtype, scope="shared.dyn")):
        for bx in T.thread_binding(16, thread="threadIdx.x"):
            with T.attr({"async_scope" if async_scope else "other_scope": 1}):
                s[T.Ramp(bx * lanes, 1, lanes)] = T.if_then_else(
                    bx < 12, T.if_then_else(1 <= bx, a[T.Ramp(bx * lanes - lanes, 1, lanes)],
                                            T.Broadcast(fill, lanes)),
                    T.Broadcast(zero, lanes))
    return f


def _calls(func) -> list:
    found = []
    structural_walk(func.body, [(Call, lambda c: found.append(c) if str(c.op.name).endswith("cp_async_raw") else None)])
    return found


def _fill_stores(func) -> list:
    found = []
    structural_walk(func.body, [(tirx.IfThenElse, found.append)])
    return found


def test_an_int8_zero_filled_copy_is_one_cp_async_predicated_on_both_guards():
    out = inject_int_tile_copies(_copy("int8", 16, 0))
    (call,) = _calls(out)
    dst, dst_off, src, src_off, nbytes, pred = call.args
    assert int(nbytes) == 16 and isinstance(pred, tirx.And)
    assert not _fill_stores(out)


def test_a_nonzero_fill_is_stored_where_the_first_guard_holds_and_the_second_does_not():
    out = inject_int_tile_copies(_copy("int8", 16, -128))
    (call,) = _calls(out)
    (store,) = _fill_stores(out)
    assert isinstance(store.condition, tirx.And) and isinstance(store.condition.b, tirx.Not)
    assert isinstance(store.then_case.value, tirx.Broadcast) and int(store.then_case.value.value.value) == -128


def test_float_copies_other_scopes_and_odd_widths_are_left_to_tvm():
    for f in (_copy("float16", 8, 0), _copy("int8", 16, 0, async_scope=False), _copy("int8", 2, 0)):
        assert structural_equal(inject_int_tile_copies(f), f)
