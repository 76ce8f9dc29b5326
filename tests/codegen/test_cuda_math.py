"""CUDA kernels compile with IEEE math, not TVM's default --use_fast_math."""
import shutil

import pytest

import tefuse
from tefuse.codegen.ptx import compile_to_ptx

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


@needs_nvcc
def test_division_and_exp_are_ieee():
    """Fast math gives div.approx / div.full.f32 for a float division; IEEE math div.rn."""
    b = tefuse.GraphBuilder()
    x, y = b.input("x", (4, 64), "float32"), b.input("y", (4, 64), "float32")
    cg = tefuse.build(b.build(b.op("div", b.op("exp", x), y)), "cuda")
    (k,) = cg.kernels
    ptx = compile_to_ptx(k.source("cuda"), "sm_90")
    assert "div.rn.f32" in ptx
    assert "div.approx" not in ptx and "div.full" not in ptx
