"""Padded tile rows wrapped onto real rows on a real GPU (schedules/cuda/clamp_rows.py): a wgmma
kernel whose operands leave partial tiles gives the very same bits as the one built with the
predicated zero fill (TEFUSE_PREDICATED_ROWS=1). Rows past M (a 7x7 conv at batch 2: 98 rows),
past N (96 output channels), and a dense whose K leaves a partial tile too (its zero fill kept).

    python -m pytest -m gpu tests/gpu/test_clamp_rows_gpu.py -q
"""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse.plan.spec import parse_chain
from tests.gpu.test_tensorcore_gpu import _inputs
from tests.schedules.cuda.test_tensorcore import _dense, _rand

pytestmark = pytest.mark.gpu


def _conv(dtype):
    g = parse_chain("conv2d(k=96,r=3,pad=1)+bias+batch_norm+relu", (2, 7, 7, 64), dtype, "NHWC")
    w = [i for i in g.inputs if i.name.endswith("_weight")][0]  # a constant weight: wgmma's [N, K] B
    a = _rand(w.shape, dtype, np.random.default_rng(1))
    return g.with_constants({w.name: (a.astype(np.float32) * 0.1).astype(a.dtype)})


CASES = {"conv_m98_n96": lambda: _conv("float16"), "conv_bf16_m98_n96": lambda: _conv("bfloat16"),
         "dense_m197_k200": lambda: _dense(197, 96, 200, "float16")}


@pytest.mark.parametrize("case", sorted(CASES))
def test_wrapped_rows_give_the_same_bits(case, monkeypatch, rng):
    graph = CASES[case]()
    vals = _inputs(graph, rng)
    outs = []
    for predicated in ("1", ""):
        monkeypatch.setenv("TEFUSE_PREDICATED_ROWS", predicated)
        cg = tefuse.build(graph, "cuda", cache=None)
        src = cg.source("cuda")
        assert "wgmma" in src
        assert ("% 98" in src or "% 197" in src) != bool(predicated)
        outs.append(cg.run(**vals)[0].astype(np.float32))
    assert np.isfinite(outs[1]).all()
    np.testing.assert_array_equal(outs[1], outs[0])
