"""A quantizing GEMM epilogue (dequantize a residual's codes, add, ReLU, quantize) computed a
vector at a time (tiles.store_epilogue): its staging tile, scales and the residual's codes read
4 lanes a load. int8's rounding is vectorizable (codegen/intrinsics.py); float8's conversions
are where the device converts in hardware (sm_89+), a lane at a time elsewhere."""
from __future__ import annotations

import re

import numpy as np
import pytest

import tefuse
from tefuse import GraphBuilder
from tefuse.graph.calibration import Calibration


def _residual_block():
    """Two 1x1 conv+relu, a third whose output adds the first's (a residual), then one more: the
    third reads its shortcut as codes and quantizes its own output for the fourth."""
    rng = np.random.default_rng(0)
    b = GraphBuilder()

    def conv(v, name):
        return b.conv2d(v, b.const((rng.standard_normal((64, 64, 1, 1)) / 8).astype("f4")), name=name)

    y = b.relu(conv(b.input("x", (8, 64, 14, 14)), "c0"))
    w = b.relu(b.add(conv(b.relu(conv(y, "c1")), "c2"), y))
    return b.build(b.relu(conv(w, "c3")))


CAL = Calibration("max", {"c0": 3.0, "c1": 4.0, "c2": 4.0, "c3": 4.0})
CODES = {"int8": "int", "fp8": "uint"}  # a 4-byte load of 4 codes


@pytest.mark.parametrize("precision, target, vector", [
    ("int8", "cuda:sm_90", True), ("fp8", "cuda:sm_90", True), ("int8", "cuda:sm_80", True),
    ("fp8", "cuda:sm_80", False)])  # (sm_80: float8 by the exact integer rule, a lane at a time)
def test_the_residual_blocks_epilogue_reads_its_shortcuts_codes_a_vector_at_a_time(precision, target, vector):
    cg = tefuse.build(_residual_block(), target, precision=precision, calibration=CAL, layout="NHWC")
    (k,) = [k for k in cg.kernels if "dequantize_linear" in [n.op for n in k.group.nodes]]
    src = k.source("cuda")
    wide = re.search(rf"\*\({CODES[precision]}\*\)\(in_\w+_xq_ptr \+", src)
    narrow = re.search(r"in_\w+_xq_ptr\[", src)
    assert (wide is not None, narrow is None) == (vector, vector), (k.template, precision, target)
    if precision == "fp8" and vector:  # the conversions four lanes at once (cuda_fp8.h)
        assert "(float4)((*(__nv_fp8x4_e4m3 *)" in src and "(__nv_fp8x4_e4m3)(" in src
