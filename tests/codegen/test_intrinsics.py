"""codegen/intrinsics.py: ops declared vectorizable compute the same numbers lane for lane (the
quantizing GEMM epilogues they let be computed a vector at a time:
tests/schedules/cuda/gemm/test_quantized_epilogue.py)."""
from __future__ import annotations

import numpy as np
import tvm
from tvm import te, tirx

import tefuse.codegen.intrinsics  # noqa: F401  (the registrations)


def test_a_vector_nearbyint_rounds_half_to_even_on_llvm():
    """QuantizeLinear's rounding, 4 lanes at a time (llvm.nearbyint.v4f32), as numpy's rint."""
    a = te.placeholder((64,), "float32", name="a")
    b = te.compute((64,), lambda i: tirx.nearbyint(a[i]), name="b")
    sch = tvm.s_tir.Schedule(te.create_prim_func([a, b]))
    (i,) = sch.get_loops(sch.get_sblock("b"))
    sch.vectorize(sch.split(i, [None, 4])[1])
    f = tvm.compile(sch.mod, target="llvm")
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999, 3.5000002] * 8, np.float32)
    got = tvm.runtime.tensor(np.zeros(64, np.float32))
    f["main"](tvm.runtime.tensor(x), got)
    np.testing.assert_array_equal(got.numpy(), np.rint(x))
