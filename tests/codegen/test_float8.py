"""float8 conversions lowered per target (tefuse/codegen/float8.py): the hardware's instruction on
CUDA sm_89+, the exact integer rule elsewhere. The rule's values are checked on llvm, through this
same lowering, by tests/ops/test_lowbit.py; the instruction's on a GPU by
tests/gpu/test_qdq_cuda_gpu.py."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tefuse
from tefuse import GraphBuilder
from tefuse.codegen.float8 import lower_expr, native
from tefuse.ops.lowbit import DECODE_CALL, ENCODE_CALL, convert_decode, convert_encode
from tvm import tirx


def _round_trip(fmt: str):
    """x -> float8 codes -> float32: one kernel with both conversions."""
    b = GraphBuilder()
    x = b.input("x", (64, 256), "float32")
    codes = b.op("fp_encode", x, format=fmt)
    return b.build(b.op("fp_decode", codes, format=fmt))


@pytest.mark.parametrize("fmt, ctype", [("float8_e4m3fn", "__nv_fp8_e4m3"), ("float8_e5m2", "__nv_fp8_e5m2")])
def test_hopper_converts_with_the_instruction(fmt, ctype):
    src = "".join(k.source("cuda") for k in tefuse.build(_round_trip(fmt), "cuda:sm_90").kernels)
    assert ctype in src
    assert "nearbyintf" not in src  # the integer rule's rounding of subnormals


def test_ampere_converts_by_the_exact_rule():
    src = "".join(k.source("cuda") for k in tefuse.build(_round_trip("float8_e4m3fn"), "cuda:sm_80").kernels)
    assert "__nv_fp8" not in src
    assert "nearbyintf" in src


def test_round_trip_on_llvm_matches_ml_dtypes():
    x = np.random.default_rng(0).standard_normal((64, 256)).astype(np.float32) * 100
    got = tefuse.build(_round_trip("float8_e4m3fn"), "llvm").run({"x": x})[0]
    np.testing.assert_array_equal(got, x.astype(ml_dtypes.float8_e4m3fn).astype(np.float32))


@pytest.mark.parametrize("target, want", [("cuda:sm_90", True), ("cuda:sm_89", True), ("cuda:sm_80", False),
                                          ("llvm", False)])
def test_native_by_compute_capability(target, want):
    from tefuse.target import make_target

    assert native(make_target(target)) is want


def test_only_saturating_native_formats_become_calls():
    x = tirx.Var("x", "float32")
    c = tirx.Var("c", "uint8")
    assert ENCODE_CALL in str(convert_encode("float8_e4m3fn", x))
    assert DECODE_CALL in str(convert_decode("float8_e5m2", c))
    # ONNX's non-saturating overflow (NaN for e4m3fn) is not the instruction's: the rule stays
    assert ENCODE_CALL not in str(convert_encode("float8_e4m3fn", x, saturate=False))
    assert DECODE_CALL not in str(convert_decode("float8_e4m3fnuz", c))
    hw = lower_expr(convert_encode("float8_e5m2", x), hardware=True)
    assert ENCODE_CALL not in str(hw) and "float8_e5m2" in str(hw)
    assert "float8" not in str(lower_expr(convert_encode("float8_e5m2", x), hardware=False))
