"""ops/fastmath.py: a resampling scale without a division on CUDA's path, within an ulp of
float32 division (numpy's), by a constant and by a run-time divisor (llvm lowers the latter
exactly; CUDA's __fdividef reciprocal is refined by the same Newton step)."""
from __future__ import annotations

import numpy as np
import pytest
import tvm
from tvm import te, tirx as tir

import tefuse.codegen.intrinsics  # noqa: F401 - the llvm lowering of the fast division
from tefuse.ops.fastmath import sample_ratio


def _ratios(divisor):
    """sample_ratio(a[i], divisor(b[i])) for a, b in [1, 4096], compiled for llvm."""
    n = 4096
    a = te.placeholder((n,), "int32", name="a")
    b = te.placeholder((n,), "int32", name="b")
    out = te.compute((n,), lambda i: sample_ratio(a[i], divisor(b[i])), name="out")
    f = tvm.compile(tvm.IRModule({"main": te.create_prim_func([a, b, out])}), target="llvm")
    rng = np.random.default_rng(0)
    av, bv = rng.integers(1, 4097, n).astype(np.int32), rng.integers(1, 4097, n).astype(np.int32)
    res = tvm.runtime.tensor(np.zeros(n, np.float32))
    f(tvm.runtime.tensor(av), tvm.runtime.tensor(bv), res)
    return av, bv, res.numpy()


def _ulps(got, want):
    return np.abs(got.view(np.int32).astype(np.int64) - want.view(np.int32).astype(np.int64))


@pytest.mark.parametrize("d", [224, 60, 7, 3840])
def test_a_constant_divisor_is_a_refined_reciprocal(d):
    av, _, got = _ratios(lambda b: tir.IntImm("int32", d))
    assert _ulps(got, av.astype(np.float32) / np.float32(d)).max() <= 1


def test_a_run_time_divisor():
    av, bv, got = _ratios(lambda b: b)
    assert _ulps(got, av.astype(np.float32) / bv.astype(np.float32)).max() <= 1


def test_cuda_gets_the_fast_division_and_no_ieee_division():
    a = te.placeholder((256,), "float32", name="a")
    b = te.placeholder((256,), "int32", name="b")
    out = te.compute((256,), lambda i: sample_ratio(a[i], b[i]), name="out")
    sch = tvm.s_tir.Schedule(te.create_prim_func([a, b, out]))
    (i,) = sch.get_loops(sch.get_sblock("out"))
    bx, tx = sch.split(i, [None, 128])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    from tefuse.target import make_target

    src = tvm.compile(sch.mod, target=make_target("cuda:sm_90")).mod.imports[0].inspect_source()
    body = src[src.index('extern "C" __global__'):]
    assert "__fdividef" in src and " / " not in body
