"""Chains of ops that use their operand twice (relu, clip, maximum) fuse into one kernel whose
expression grows linearly: each operand is bound once (ops/value.bind), and LLVM codegen gets
the bindings as local buffers (codegen/let_to_local.py), so a 32-op chain builds in seconds
(it took over two minutes at 10 ops when each op repeated its operand)."""
from __future__ import annotations

import time

import numpy as np
import pytest

import tefuse


def _chain(n: int, shape=(2, 3)):
    """relu, clip, maximum(v, v), repeated: every op reads its input twice."""
    b = tefuse.GraphBuilder()
    x = b.input("x", shape)
    y = x
    for k in range(n):
        if k % 3 == 0:
            y = b.relu(y)
        elif k % 3 == 1:
            y = b.clip(y, min=-1.0 + k / 100, max=2.0 - k / 100)
        else:
            y = b.maximum(y, y)
    return b.build(y)


def _reference(x: np.ndarray, n: int) -> np.ndarray:
    y = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        for k in range(n):
            if k % 3 == 0:
                y = np.maximum(y, 0)
            elif k % 3 == 1:
                y = np.clip(y, -1.0 + k / 100, 2.0 - k / 100)
            else:
                y = np.maximum(y, y)
    return y


def test_a_32_op_chain_builds_in_one_kernel_within_seconds():
    x = np.array([[np.nan, -3.0, 0.25], [1.5, 9.0, -0.0]], "float32")
    t = time.perf_counter()
    cg = tefuse.build(_chain(32), "llvm")
    seconds = time.perf_counter() - t
    assert len(cg.kernels) == 1
    assert seconds < 20, f"a 32-op chain took {seconds:.1f} s to build"
    got = cg.run(x)[0]
    want = _reference(x, 32)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[~np.isnan(want)], want[~np.isnan(want)], rtol=1e-6)


def test_the_kernel_grows_linearly_with_the_chain():
    """Twice the ops, about twice the code: no operand is repeated."""
    sizes = {n: len(tefuse.build(_chain(n), "llvm").source("tir")) for n in (8, 16, 32)}
    assert sizes[32] < 2.5 * sizes[16] < 2.5 * 2.5 * sizes[8], sizes


def test_a_value_read_twice_in_a_group_is_bound_once():
    """x * sigmoid(x) written as two ONNX-like nodes: the product's operands share one binding."""
    b = tefuse.GraphBuilder()
    x = b.input("x", (4, 5))
    y = b.relu(b.clip(x, min=-2.0, max=2.0))
    g = b.build(b.mul(y, b.sigmoid(y)))
    cg = tefuse.build(g, "llvm")
    assert len(cg.kernels) == 1
    xv = np.linspace(-3, 3, 20, dtype="float32").reshape(4, 5)
    r = np.maximum(np.clip(xv, -2, 2), 0).astype(np.float64)
    np.testing.assert_allclose(cg.run(xv)[0], r / (1 + np.exp(-r)), rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(__import__("shutil").which("nvcc") is None, reason="nvcc not on PATH")
def test_the_chain_compiles_for_cuda():
    """CUDA's C codegen prints each binding as a local variable: the same chain, one kernel."""
    cg = tefuse.build(_chain(32, (64, 256)), "cuda")
    assert len(cg.kernels) == 1
    assert cg.source("cuda").count("? ") < 200  # 32 selects and their NaN tests, not 2^32
