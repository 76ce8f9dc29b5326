"""Fusion's quantized outputs through the tensor-core templates: a residual block's fp16 output
and its int8 / float8 QuantizeLinear written by one GEMM epilogue (tiles.follow_outputs), on
wgmma (sm_90) and mma.sync (sm_80), and the same values as one kernel an op on llvm."""
from __future__ import annotations

import re

import numpy as np
import pytest

import tefuse
from tefuse.bench.forced_config import ForcedConfig
from tefuse.codegen.ptx import compile_to_ptx
from tefuse.graph.calibration import Calibration
from tests.schedules.cuda.test_prologue import _residual_block_net

# float residuals: the add reads c0's float value, so c0's kernel stores it and its codes
CAL = Calibration("max", {"c0": 3.0, "c1": 4.0, "c2": 4.0}, residuals=False)


def _two_output_kernel(cg):
    (k,) = [k for k in cg.kernels if len(k.group.outputs) == 2]
    return k


@pytest.mark.parametrize("precision,target,template", [
    ("int8", "cuda:sm_90", "wgmma_gemm"), ("fp8", "cuda:sm_90", "wgmma_gemm"),
    ("int8", "cuda:sm_80", "tensorcore_gemm"),  # (sm_80 has no fp8 tensor cores)
])
def test_a_value_and_its_quantize_are_stored_by_one_gemm_epilogue(precision, target, template):
    cg = tefuse.build(_residual_block_net(), target, precision=precision, calibration=CAL)
    k = _two_output_kernel(cg)
    assert k.template == template and k.config_source == "fallback"
    assert [o.dtype for o in k.group.outputs] == ["float16", "int8" if precision == "int8" else "uint8"]
    src = k.source("cuda")
    value, codes = (re.search(rf"{t}\* __restrict__ (out_\w+)_ptr", src).group(1) for t in ("half", "(?:signed char|uchar)"))
    # the codes are computed from the value this thread stored (read back a vector at a time, or
    # a lane at a time where their rounding cannot be vectorized), and stored a vector at a time
    codes_store = re.search(rf"\*\((u?int2?)\*\)\({codes}_ptr \+", src)
    value_store = re.search(rf"\*\(half\d\*\)\({value}_ptr \+", src)
    assert codes_store and value_store
    assert re.search(rf"\*\(half\d\*\)\({value}_ptr \+[^;]*;|{value}_ptr\[",
                     src[value_store.end():codes_store.start()])
    assert not any([n.op for n in k.group.nodes] == ["quantize_linear"] for k in cg.kernels)  # no kernel of its own


@pytest.mark.parametrize("precision", ["int8", "fp8"])
def test_quantized_outputs_compute_what_one_kernel_an_op_does(precision):
    g = _residual_block_net()
    fused = tefuse.build(g, "llvm", precision=precision, calibration=CAL)
    assert len([k for k in fused.kernels if len(k.group.outputs) == 2]) == 1
    alone = tefuse.build(g, "llvm", precision=precision, calibration=CAL, fuse=False)
    x = np.random.default_rng(3).standard_normal((8, 32, 14, 14)).astype(np.float32)
    got, want = fused.run(x=x)[0], alone.run(x=x)[0]
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3 * float(np.abs(want).max()))


@pytest.mark.parametrize("precision,target,cfg", [
    ("int8", "cuda:sm_90", {"tile": [64, 64, 32, 32], "bk": 128, "stages": 4, "intrin": "wgmma", "slices": 1}),
    ("fp8", "cuda:sm_90", {"tile": [64, 64, 32, 32], "bk": 128, "stages": 4, "intrin": "wgmma", "slices": 1}),
    ("int8", "cuda:sm_80", {"tile": [64, 64, 32, 32], "bk": 32, "stages": 3, "intrin": "mma"})])
def test_a_quantized_output_under_an_8_wide_store_is_computed_at_most_4_lanes_wide(precision, target, cfg):
    """vec_out 8 (a tuning knob's value): the value is stored 8 wide, its codes computed at most
    4 lanes at once (float32 constants, float8's x4 conversions), stored whole; the kernel
    compiles (8 lanes printed an 8-argument make_ulonglong4 and a float32x8 -> float8x8 cast)."""
    cg = tefuse.build(_residual_block_net((8, 64, 16, 16)), target, precision=precision, calibration=CAL,
                      db=ForcedConfig({**cfg, "vec_out": 8}))  # (M 2048: whole tiles, no masked tail)
    k = _two_output_kernel(cg)
    assert k.config_source == "tuned"
    src = k.source("cuda")
    value = re.search(r"half\* __restrict__ (out_\w+)_ptr", src).group(1)
    assert re.search(rf"\*\(uint4\*\)\({value}_ptr \+", src)  # the value: 8 halves a store
    assert "make_ulonglong4" not in src
    compile_to_ptx(src, "sm_90a" if target.endswith("sm_90") else "sm_80")
