"""Cluster split-K on a real GPU (schedules/cuda/gemm/sliced_k.py, passes/cluster_sum.py): each
CTA of a cluster computes a slice of the reduction and the cluster adds the partial tiles
through distributed shared memory. The sliced kernel gives the numbers of the unsliced one with the same
tile (fp16 and bf16, 1x1 and 3x3, 2 and 4 slices, ragged rows, a Linear viewed back to 3-D), and the untuned build of a deep
small grid (which takes the split) those of the llvm build.

    python -m pytest -m gpu tests/gpu/test_cluster_sum_gpu.py -q
"""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse.bench.forced_config import ForcedConfig
from tests.gpu.test_tensorcore_gpu import _inputs
from tests.schedules.cuda.gemm.test_wgmma import _ohwi_conv
from tests.schedules.cuda.passes.test_cluster_sum import _projection_residual

pytestmark = pytest.mark.gpu

CASES = {  # (graph, tile, stages, slices)
    "1x1_64x128_2": (lambda: _ohwi_conv(4, 7, 2048, 512, 1), (64, 128, 32, 64), 4, 2),
    "1x1_128x128_4": (lambda: _ohwi_conv(4, 7, 1024, 256, 1), (128, 128, 64, 64), 3, 4),
    "3x3_128x128_2": (lambda: _ohwi_conv(4, 14, 256, 256, 3), (128, 128, 64, 64), 3, 2),
    "3x3_bf16_64x128_2": (lambda: _ohwi_conv(4, 7, 512, 512, 3, dtype="bfloat16"), (64, 128, 32, 64), 4, 2),
    # GPT-2's projection viewed back to [batch, rows, N] and added to the residual (rows of two
    # sequences of 100 in 64-row tiles)
    "linear_reshaped_64x128_2": (lambda: _projection_residual(2, 100, 768, 768), (64, 128, 32, 64), 3, 2),
}


def _close(got, want):
    assert np.isfinite(got).all()
    assert np.abs(got - want).max() <= 1e-2 * np.abs(want).max()


@pytest.mark.parametrize("case", sorted(CASES))
def test_sliced_kernel_gives_the_unsliced_numbers(case, rng):
    make, tile, stages, slices = CASES[case]
    graph = make()
    vals = _inputs(graph, rng)
    out = {}
    for s in (1, slices):
        db = ForcedConfig({"tile": tile, "bk": 64, "stages": stages, "intrin": "wgmma", "vec_out": 4, "slices": s})
        cg = tefuse.build(graph, "cuda", db=db, cache=None, split_k=False)
        src = cg.source("cuda")
        assert ("tefuse_cluster_map" in src) == (s > 1)
        out[s] = cg.run(**vals)[0].astype(np.float32)
    _close(out[slices], out[1])


def test_the_untuned_deep_small_grid_takes_the_split_and_matches_llvm(rng):
    """ResNet-50's 512x7x7 3x3 at batch 16: one kernel in clusters of 4 (cluster_split)."""
    graph = _ohwi_conv(16, 7, 512, 512, 3)
    cg = tefuse.build(graph, "cuda", cache=None)
    (k,) = cg.kernels
    assert "tefuse_cluster_map" in k.source("cuda")
    vals = _inputs(graph, rng)
    _close(cg.run(**vals)[0].astype(np.float32), tefuse.build(graph, "llvm").run(**vals)[0].astype(np.float32))
