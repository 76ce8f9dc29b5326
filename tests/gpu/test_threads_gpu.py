"""Runs of one CUDA CompiledGraph from many threads at once: each gets the answer a
single-threaded run gives (each run takes its own buffer set; tests/runtime/test_threads.py on
the CPU).

Deselected by default; run with  python -m pytest -m gpu tests/gpu/test_threads_gpu.py -q
"""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tests.runtime.test_threads import RUNS, THREADS, _chain, _hammer, _numpy

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("precision", ["fp32", "fp16"])
def test_cuda_runs_from_threads_match_single_threaded_runs(precision, rng):
    g, ws = _chain(rng)
    cg = tefuse.build(g, "cuda", precision=precision)
    inputs = [rng.standard_normal((4, 64)).astype("float32") for _ in range(THREADS * RUNS)]
    reference = [cg.run(x)[0] for x in inputs]  # one thread
    tol = 1e-4 if precision == "fp32" else 2e-2
    np.testing.assert_allclose(reference[0], _numpy(inputs[0], ws), rtol=tol, atol=tol)
    results = _hammer(lambda x: cg.run(x)[0], inputs)
    wrong = [i for i, r in results if not np.array_equal(r, reference[i])]
    assert len(results) == THREADS * RUNS
    assert not wrong, f"{len(wrong)} of {len(results)} threaded runs differ from the single-threaded run"
