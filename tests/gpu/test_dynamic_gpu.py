"""CUDA kernels over dim ranges on a real GPU: one build of row-wise and reduction kernels with
symbolic batch and sequence length, and one of a float32 CNN with a symbolic batch (CUDA-core
convs and classifier), give llvm's values at several sizes.

Deselected by default; run with  python -m pytest -m gpu tests/gpu/test_dynamic_gpu.py -q
"""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse.frontend.onnx import import_onnx
from tests.codegen.test_dynamic_cuda import RANGES, rows_graph
from tests.frontend.dynamic_models import cnn

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("b, s", [(1, 1), (3, 77), (16, 512)])
def test_one_cuda_build_matches_llvm_at_each_size(b, s, rng):
    cuda = tefuse.build(rows_graph(), "cuda", dynamic=RANGES)
    llvm = tefuse.build(rows_graph(), "llvm", dynamic=RANGES)
    feeds = {k: rng.standard_normal((b, s, 64)).astype("float32") for k in ("x", "pos")}
    for got, want in zip(cuda.run(**feeds), llvm.run(**feeds)):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [1, 5, 32])
def test_a_float32_cnn_on_cuda_cores_matches_llvm_at_each_batch(n, rng):
    """Direct convs with the batch on the grid, the classifier a block a row (CUDA cores)."""
    graph = lambda: import_onnx(cnn("N"), dynamic=True)
    cuda = tefuse.build(graph(), "cuda", dynamic={"N": "1:8:32"})
    llvm = tefuse.build(graph(), "llvm", dynamic={"N": "1:8:32"})
    x = rng.standard_normal((n, 3, 8, 8)).astype("float32")
    (got,), (want,) = cuda.run(x=x), llvm.run(x=x)
    assert got.shape == want.shape == (n, 10)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n", [1, 5, 32])
def test_an_fp16_channels_last_cnn_matches_llvm_at_each_batch(n, rng):
    """fp16 puts the CNN channels-last: its max pool runs on the window-pool template with the
    batch symbolic (its tail predicated), as do its injective kernels' 16-byte vector stores."""
    graph = lambda: import_onnx(cnn("N"), dynamic=True)
    cuda = tefuse.build(graph(), "cuda", precision="fp16", dynamic={"N": "1:8:32"})
    assert "cuda_window_pool" in {k.template for k in cuda.kernels}
    llvm = tefuse.build(graph(), "llvm", dynamic={"N": "1:8:32"})
    x = rng.standard_normal((n, 3, 8, 8)).astype("float32")
    (got,), (want,) = cuda.run(x=x), llvm.run(x=x)
    assert got.shape == want.shape == (n, 10)
    np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-2)
