"""The TMA mainloop (experimental, TEFUSE_TMA=CMxCN) on a real Hopper GPU: a 1x1 conv with a
ragged M (784 rows: 13 tiles of 64, padded to whole clusters) against the same graph on llvm, for
each cluster shape, with the deepest pipeline TEFUSE_TMA_STAGES=max allows, and a 128x128 tile at
2 stages (its epilogue's staging over the mainloop's barriers).

    python -m pytest -m gpu tests/gpu/test_tma_gpu.py -q
"""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse.bench.forced_config import ForcedConfig
from tefuse.plan.spec import parse_chain
from tests.gpu.test_tensorcore_gpu import _check, _inputs

pytestmark = pytest.mark.gpu

TILES = {"64x128": [64, 128, 32, 64], "128x128": [128, 128, 64, 64]}


def _conv(hw, c):
    g = parse_chain("conv2d(k=256,r=1)+bias+relu", (16, hw, hw, c), "float16", "NHWC")
    w = [i for i in g.inputs if i.name.endswith("_weight")][0]
    return g.with_constants({w.name: (np.random.default_rng(1).standard_normal(w.shape) * 0.05).astype("float16")})


# the last: 98 tiles of 128 rows at 2 stages, whose staging tile covers the barriers: were they
# not invalidated first, row 120 of the later tiles would read back the barriers' bytes (H100)
@pytest.mark.parametrize("cluster, stages, tile, hw, c", [
    ("1x1", "", "64x128", 7, 512), ("2x1", "", "64x128", 7, 512), ("1x2", "", "64x128", 7, 512),
    ("2x2", "", "64x128", 7, 512), ("2x1", "max", "64x128", 7, 512), ("2x1", "2", "128x128", 28, 512)])
def test_tma_mainloop_matches_llvm(cluster, stages, tile, hw, c, monkeypatch, rng):
    monkeypatch.setenv("TEFUSE_TMA", cluster)
    monkeypatch.setenv("TEFUSE_TMA_STAGES", stages)
    graph = _conv(hw, c)
    cfg = {"tile": TILES[tile], "stages": 4, "bk": 64, "intrin": "wgmma", "vec_out": 4}
    cg = tefuse.build(graph, "cuda", cache=None, db=ForcedConfig(cfg))
    assert f"tefuse_tma_m{tile.replace('x', 'n')}" in cg.source("cuda")
    _check(cg, graph, _inputs(graph, rng))
