"""The TMA mainloop (experimental, TEFUSE_TMA=CMxCN) on a real Hopper GPU: a 1x1 conv with a
ragged M (784 rows: 13 tiles of 64, padded to whole clusters) against the same graph on llvm, for
each cluster shape, and with the deepest pipeline TEFUSE_TMA_STAGES=max allows.

    python -m pytest -m gpu tests/gpu/test_tma_gpu.py -q
"""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse.bench.wgmma_check import ForcedConfig
from tefuse.plan.spec import parse_chain
from tests.gpu.test_tensorcore_gpu import _check, _inputs

pytestmark = pytest.mark.gpu

WGMMA = {"tile": [64, 128, 32, 64], "stages": 4, "bk": 64, "intrin": "wgmma", "vec_out": 4}


def _conv():
    g = parse_chain("conv2d(k=256,r=1)+bias+relu", (16, 7, 7, 512), "float16", "NHWC")
    w = [i for i in g.inputs if i.name.endswith("_weight")][0]
    return g.with_constants({w.name: (np.random.default_rng(1).standard_normal(w.shape) * 0.05).astype("float16")})


@pytest.mark.parametrize("cluster, stages", [("1x1", ""), ("2x1", ""), ("1x2", ""), ("2x2", ""), ("2x1", "max")])
def test_tma_mainloop_matches_llvm(cluster, stages, monkeypatch, rng):
    monkeypatch.setenv("TEFUSE_TMA", cluster)
    monkeypatch.setenv("TEFUSE_TMA_STAGES", stages)
    graph = _conv()
    cg = tefuse.build(graph, "cuda", cache=None, db=ForcedConfig(WGMMA))
    assert "tefuse_tma_m64n128" in cg.source("cuda")
    _check(cg, graph, _inputs(graph, rng))
