"""codegen/intrinsics.py: ops declared vectorizable compute the same numbers lane for lane, and a
quantizing GEMM epilogue is computed a vector at a time."""
from __future__ import annotations

import re

import numpy as np
import tvm
from tvm import te, tirx

import tefuse
from tefuse import GraphBuilder
from tefuse.graph.calibration import Calibration

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


def _int8_block():
    """Two 1x1 conv+relu, a third whose output adds the first's (a residual), then one more: the
    third reads its shortcut as codes and quantizes its own output for the fourth."""
    rng = np.random.default_rng(0)
    b = GraphBuilder()

    def conv(v, name):
        return b.conv2d(v, b.const((rng.standard_normal((64, 64, 1, 1)) / 8).astype("f4")), name=name)

    y = b.relu(conv(b.input("x", (8, 64, 14, 14)), "c0"))
    w = b.relu(b.add(conv(b.relu(conv(y, "c1")), "c2"), y))
    return b.build(b.relu(conv(w, "c3")))


def test_a_quantizing_epilogue_reads_its_residual_codes_a_vector_at_a_time():
    """The residual block's wgmma epilogue (dequantize the shortcut, add, relu, quantize) is
    computed 4 lanes wide: its shortcut's codes one 4-byte load, not 4 one-byte ones."""
    cal = Calibration("max", {"c0": 3.0, "c1": 4.0, "c2": 4.0, "c3": 4.0})
    cg = tefuse.build(_int8_block(), "cuda:sm_90", precision="int8", calibration=cal, layout="NHWC")
    (k,) = [k for k in cg.kernels if "dequantize_linear" in [n.op for n in k.group.nodes]]
    assert k.template == "wgmma_gemm"
    src = k.source("cuda")
    assert re.search(r"\*\(int\*\)\(in_\w+_xq_ptr \+", src) and not re.search(r"in_\w+_xq_ptr\[", src)
    assert re.search(r"\w+\.w = nearbyintf\(\w+\.w\);", src)
