"""Padded tile rows wrapped onto real rows on a real GPU (schedules/cuda/passes/clamp_rows.py): a
wgmma kernel whose operands leave partial tiles gives the very same bits as the one built with
TVM's predicated zero fill (the template's clamp_rows step left out). Rows past M (a 7x7 conv at batch 2: 98 rows),
past N (96 output channels), and a dense whose K leaves a partial tile too (its zero fill kept).

    python -m pytest -m gpu tests/gpu/test_clamp_rows_gpu.py -q
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.gpu.test_narrow_staging_gpu import _graph, built_both_ways
from tests.schedules.cuda.gemm.test_mma import _dense

pytestmark = pytest.mark.gpu

# a 3x3 conv at batch 2, 7x7 (98 rows, 96 output channels) with a constant weight (wgmma's [N, K] B)
CASES = {"conv_m98_n96": lambda: _graph("float16", "NHWC", True, n=2, hw=7),
         "conv_bf16_m98_n96": lambda: _graph("bfloat16", "NHWC", True, n=2, hw=7),
         "dense_m197_k200": lambda: _dense(197, 96, 200, "float16")}


@pytest.mark.parametrize("case", sorted(CASES))
def test_wrapped_rows_give_the_same_bits(case, monkeypatch, rng):
    (pred_src, predicated), (wrap_src, wrapped) = built_both_ways(CASES[case](), "clamp_rows",
                                                                  rng, monkeypatch)
    assert "wgmma" in wrap_src and "wgmma" in pred_src
    wraps = lambda src: "% 98" in src or "% 197" in src
    assert wraps(wrap_src) and not wraps(pred_src)
    np.testing.assert_array_equal(wrapped, predicated)
