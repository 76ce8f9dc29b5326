"""A padded GEMM's row bounds over run-time dims without dividing by them (passes/dim_bounds.py):
the crop of rows N*S written to [N, S] checks `r < N * S` and computes the same values."""
from __future__ import annotations

import numpy as np
import tvm
from tvm import tirx
from tvm.script import tirx as T
from tvm_ffi import structural_equal, structural_walk

from tefuse.schedules.cuda.passes.dim_bounds import divide_free_bounds


@T.prim_func(check_well_formed=False)
def crop(x: T.Buffer(("N * S",), "float32"), y: T.Buffer(("N", "S"), "float32")):
    N, S = T.int32(), T.int32()
    for r in range((N * S + 63) // 64 * 64):
        with T.sblock("crop"):
            vr = T.axis.spatial((N * S + 63) // 64 * 64, r)
            T.where(0 <= r // S and r // S < N and 0 <= r % S and r % S < S)
            y[vr // S, vr % S] = x[vr] * T.float32(2)


@T.prim_func(check_well_formed=False)
def fixed(x: T.Buffer((96,), "float32"), y: T.Buffer((2, 48), "float32")):
    for r in range(128):
        with T.sblock("crop"):
            vr = T.axis.spatial(128, r)
            T.where(r // 48 < 2 and r % 48 < 48)
            y[vr // 48, vr % 48] = x[vr] * T.float32(2)


def _divisions_in_conditions(func) -> int:
    found = []

    def cond(c):
        structural_walk(c, [((tirx.FloorDiv, tirx.FloorMod), found.append)])

    structural_walk(func.body, [((tirx.LT, tirx.LE), cond)])
    return len(found)


def test_the_crop_checks_rows_against_n_times_s_and_computes_the_same():
    assert _divisions_in_conditions(crop) == 4
    out = divide_free_bounds(crop)
    assert _divisions_in_conditions(out) == 0
    lib = tvm.compile(tvm.IRModule({"main": out}), target="llvm")
    for n, s in ((1, 5), (3, 7), (2, 64)):
        x = np.arange(n * s, dtype="float32")
        y = tvm.runtime.empty((n, s), "float32", tvm.cpu())
        lib["main"](tvm.runtime.tensor(x), y)
        np.testing.assert_array_equal(y.numpy(), (2 * x).reshape(n, s))


def test_a_kernel_of_fixed_sizes_is_left_as_it_is():
    assert structural_equal(divide_free_bounds(fixed), fixed)
