"""16-bit staging on a real GPU: a tensor-core kernel built with its accumulators staged in the
output's type gives the very same bits as the one built with float32 staging (the template's
narrow_staging step left out), for mma.sync and wgmma, fp16 and bf16, NHWC and NCHW outputs; the
tolerance tests elsewhere would let an ulp through.

    python -m pytest -m gpu tests/gpu/test_narrow_staging_gpu.py -q
"""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse.plan.spec import parse_chain
from tests.gpu.test_tensorcore_gpu import _inputs
from tests.schedules.cuda.gemm.test_mma import _rand

pytestmark = pytest.mark.gpu


def _graph(dtype, layout, const_weight, n=4, hw=14):
    shape = (n, hw, hw, 64) if layout == "NHWC" else (n, 64, hw, hw)
    g = parse_chain("conv2d(k=96,r=3,pad=1)+bias+batch_norm+relu", shape, dtype, layout)
    if not const_weight:
        return g
    w = [i for i in g.inputs if i.name.endswith("_weight")][0]  # a constant weight: wgmma's [N, K] B on Hopper
    a = _rand(w.shape, dtype, np.random.default_rng(1))
    return g.with_constants({w.name: (a.astype(np.float32) * 0.1).astype(a.dtype)})


def built_both_ways(graph, step: str, rng, monkeypatch) -> list:
    """[(CUDA source, output as float32)] of `graph` built and run without the tensor-core
    template's finishing rewrite `step` (narrow_staging, clamp_rows), then with it (each build
    uncached), on the same inputs; the second output checked finite."""
    from tefuse.schedules.cuda.gemm import template

    vals = _inputs(graph, rng)
    got = []
    for keep in (False, True):
        with monkeypatch.context() as m:
            if not keep:
                m.setattr(template, step, lambda func: func)
            cg = tefuse.build(graph, "cuda", cache=None)
        got.append((cg.source("cuda"), cg.run(**vals)[0].astype(np.float32)))
    assert np.isfinite(got[1][1]).all()
    return got


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("layout, const_weight", [("NHWC", True), ("NHWC", False), ("NCHW", False)])
def test_16_bit_staging_gives_the_same_bits(dtype, layout, const_weight, monkeypatch, rng):
    (wide_src, wide), (narrow_src, narrow) = built_both_ways(_graph(dtype, layout, const_weight),
                                                              "narrow_staging", rng, monkeypatch)
    assert "((float*)buf_dyn_shmem" in wide_src and "((float*)buf_dyn_shmem" not in narrow_src
    np.testing.assert_array_equal(narrow, wide)
