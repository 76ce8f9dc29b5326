"""Guards a loop's iterations share, tested before the loop (passes/invariant_guards.py): moved
where the loop's whole body is such an `if` without a barrier, left elsewhere; a dynamic conv's
crop leaves its store loop, as unrolled as the exact kernel's."""
from __future__ import annotations

import re

import numpy as np
import tvm
from tvm import tirx
from tvm.script import tirx as T
from tvm_ffi import structural_equal

import tefuse
from tefuse import GraphBuilder
from tefuse.schedules.cuda.passes.invariant_guards import hoist_invariant_guards


@T.prim_func(check_well_formed=False)
def shared_guard(x: T.Buffer((8, 16), "float32"), y: T.Buffer((8, 16), "float32"), n: T.int32):
    for i in range(8):
        for j in range(16):
            if i < n:
                y[i, j] = x[i, j] * T.float32(2)


@T.prim_func(check_well_formed=False)
def own_guard(x: T.Buffer((16,), "float32"), y: T.Buffer((16,), "float32"), n: T.int32):
    for j in range(16):
        if j < n:
            y[j] = x[j]


@T.prim_func(check_well_formed=False)
def guard_with_barrier(x: T.Buffer((16,), "float32"), y: T.Buffer((16,), "float32"), n: T.int32):
    for j in range(16):
        if n > 0:
            y[j] = x[j]
            T.tvm_storage_sync("shared")


def _loop_under_if(func) -> bool:
    """Whether the body's inner loop is the `then` of an `if` (the guard moved out of it)."""
    outer = func.body
    return isinstance(outer, tirx.For) and isinstance(outer.body, tirx.IfThenElse) and isinstance(
        outer.body.then_case, tirx.For)


def test_a_guard_the_inner_loop_shares_moves_before_it_and_computes_the_same():
    assert not _loop_under_if(shared_guard)
    out = hoist_invariant_guards(shared_guard)
    assert _loop_under_if(out)
    x = np.arange(128, dtype="float32").reshape(8, 16)
    for func in (shared_guard, out):
        lib = tvm.compile(tvm.IRModule({"main": func}), target="llvm")
        y = tvm.runtime.tensor(np.full((8, 16), -1, "float32"))
        lib["main"](tvm.runtime.tensor(x), y, 5)
        want = np.where(np.arange(8)[:, None] < 5, 2 * x, -1)
        np.testing.assert_array_equal(y.numpy(), want)


def test_a_guard_on_the_loop_variable_or_around_a_barrier_stays():
    assert structural_equal(hoist_invariant_guards(own_guard), own_guard)
    assert structural_equal(hoist_invariant_guards(guard_with_barrier), guard_with_barrier)


def _stage_end(batch):
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x, r = b.input("x", (batch, 56, 56, 64), "float16"), b.input("r", (batch, 56, 56, 256), "float16")
    y = b.conv2d(x, b.const((rng.standard_normal((256, 1, 1, 64)) * 0.1).astype("float16")), layout="NHWC",
                 weight_layout="OHWI")
    return b.build(b.relu(b.add(b.bias_add(y, b.const(rng.standard_normal(256).astype("float16")), axis=3), r)))


def test_a_dynamic_convs_crop_leaves_its_store_loop():
    """ResNet's stage-1 block end over a run-time batch: its rows come 64 to an image's group, so
    the crop `(...) / 49 < N` is the same for a thread's whole store loop, and is tested first."""
    cg = tefuse.build(_stage_end("N"), "cuda:sm_90", dynamic={"N": "1:32:64"}, cache=None)
    src = cg.kernels[0].source("cuda")
    tail = src[src.rindex("wgmma.wait_group"):]
    guard, loop = re.search(r"if \(.*< N\)", tail), re.search(r"for \(int \w+ = 0; \w+ < 16;", tail)
    assert guard and loop and guard.start() < loop.start()
