"""CUDA kernels over dim ranges on a real GPU: one build of row-wise and reduction kernels with
symbolic batch and sequence length gives llvm's values at several sizes.

Deselected by default; run with  python -m pytest -m gpu tests/gpu/test_dynamic_gpu.py -q
"""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tests.codegen.test_dynamic_cuda import RANGES, rows_graph

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("b, s", [(1, 1), (3, 77), (16, 512)])
def test_one_cuda_build_matches_llvm_at_each_size(b, s, rng):
    cuda = tefuse.build(rows_graph(), "cuda", dynamic=RANGES)
    llvm = tefuse.build(rows_graph(), "llvm", dynamic=RANGES)
    feeds = {k: rng.standard_normal((b, s, 64)).astype("float32") for k in ("x", "pos")}
    for got, want in zip(cuda.run(**feeds), llvm.run(**feeds)):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
