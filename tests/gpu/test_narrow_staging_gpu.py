"""16-bit staging on a real GPU: a tensor-core kernel built with its accumulators staged in the
output's type gives the very same bits as the one built with float32 staging
(TEFUSE_WIDE_STAGING=1), for mma.sync and wgmma, fp16 and bf16, NHWC and NCHW outputs; the
tolerance tests elsewhere would let an ulp through.

    python -m pytest -m gpu tests/gpu/test_narrow_staging_gpu.py -q
"""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse.plan.spec import parse_chain
from tests.gpu.test_tensorcore_gpu import _inputs
from tests.schedules.cuda.test_tensorcore import _rand

pytestmark = pytest.mark.gpu


def _graph(dtype, layout, const_weight):
    shape = (4, 14, 14, 64) if layout == "NHWC" else (4, 64, 14, 14)
    g = parse_chain("conv2d(k=96,r=3,pad=1)+bias+batch_norm+relu", shape, dtype, layout)
    if not const_weight:
        return g
    w = [i for i in g.inputs if i.name.endswith("_weight")][0]  # a constant weight: wgmma's [N, K] B on Hopper
    a = _rand(w.shape, dtype, np.random.default_rng(1))
    return g.with_constants({w.name: (a.astype(np.float32) * 0.1).astype(a.dtype)})


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("layout, const_weight", [("NHWC", True), ("NHWC", False), ("NCHW", False)])
def test_16_bit_staging_gives_the_same_bits(dtype, layout, const_weight, monkeypatch, rng):
    graph = _graph(dtype, layout, const_weight)
    vals = _inputs(graph, rng)
    outs = []
    for wide in ("1", ""):
        monkeypatch.setenv("TEFUSE_WIDE_STAGING", wide)
        cg = tefuse.build(graph, "cuda", cache=None)
        src = cg.source("cuda")
        assert ("((float*)buf_dyn_shmem" in src) == bool(wide)
        outs.append(cg.run(**vals)[0].astype(np.float32))
    assert np.isfinite(outs[1]).all()
    np.testing.assert_array_equal(outs[1], outs[0])
