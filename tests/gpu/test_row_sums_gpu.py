"""float8 rows summed with a batch in flight (schedules/cuda/passes/row_sums.py) on Hopper: each
row's sum is added to the accumulators in the same order as when every row is waited for (the
2-stage kernel), so the pipelined kernels (3 and 4 stages, rows unrolled by 2 and 4, odd and even
depths, ragged rows) give the 2-stage kernel's numbers bit for bit, and llvm's within the tensor
cores' accumulation.

    python -m pytest -m gpu tests/gpu/test_row_sums_gpu.py -q
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tefuse
from tefuse.bench.forced_config import ForcedConfig
from tefuse.schedules.cuda.passes import row_sums
from tefuse.target import device_caps, make_target
from tests.schedules.cuda.gemm.test_wgmma_8bit import _fp8_dense

pytestmark = pytest.mark.gpu

CASES = {  # (M, N, K, tile)
    "3-rows": (200, 256, 384, (64, 128, 32, 64)),
    "9-rows": (200, 256, 1152, (64, 128, 32, 64)),
    "16-rows-128x128": (300, 256, 2048, (128, 128, 64, 64)),
    "10-rows-128x64": (256, 192, 1280, (128, 64, 64, 32)),
}


def _build(graph, tile, stages):
    cfg = {"tile": tile, "bk": 128, "stages": stages, "intrin": "wgmma", "vec_out": 4, "slices": 1}
    cg = tefuse.build(graph, "cuda", db=ForcedConfig(cfg), cache=None)
    assert [k.template for k in cg.kernels] == ["wgmma_gemm"]
    assert ("rowsum" in cg.source("cuda")) == (stages >= 3)
    return cg


@pytest.mark.parametrize("group", [2, 4])
@pytest.mark.parametrize("case", sorted(CASES))
def test_rows_in_flight_give_the_numbers_of_rows_waited_for(case, group, monkeypatch):
    if not device_caps(make_target("cuda")).has_wgmma:
        pytest.skip("float8 products take the tensor cores on Hopper (wgmma) only")
    monkeypatch.setattr(row_sums, "ROW_GROUP", group)
    m, n, k, tile = CASES[case]
    graph = _fp8_dense(m, n, k)
    x = np.random.default_rng(1).standard_normal((m, k)).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    waited = _build(graph, tile, 2).run(x=x)[0]
    want = tefuse.build(graph, "llvm").run(x=x)[0]
    assert np.abs(waited - want).max() <= 1e-3 * np.abs(want).max()
    for stages in (3, 4):
        np.testing.assert_array_equal(_build(graph, tile, stages).run(x=x)[0], waited)
