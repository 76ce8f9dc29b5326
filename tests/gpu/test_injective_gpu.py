"""The CUDA injective template on a real GPU: 16-bit outputs stored one 16-byte vector a thread
(the untuned config where rows hold whole vectors: the ResNet stem's pixel-pair pad, a bias +
ReLU with a partial last block, a transpose, bf16) give llvm's values, bit for bit.

Deselected by default; run with  python -m pytest -m gpu tests/gpu/test_injective_gpu.py -q
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tefuse
from tests.schedules.gpu.test_injective import _bias_relu, _planar_resize, _space, _stem_pad

pytestmark = pytest.mark.gpu


def _transpose():
    b = tefuse.GraphBuilder()
    x = b.input("x", (2, 16, 5, 7), "float16")
    return b.build(b.transpose(x, axes=(0, 2, 3, 1)))


CASES = {"stem_pad": lambda: _stem_pad(3, 30), "bias_relu_tail": lambda: _bias_relu(64),
         "bias_relu_bf16": lambda: _bias_relu(128, "bfloat16"), "transpose": _transpose}


@pytest.mark.parametrize("case", list(CASES))
def test_vector_stores_give_llvms_values(case, rng):
    graph = CASES[case]()
    vals = {i.name: rng.standard_normal(i.shape).astype(ml_dtypes.bfloat16 if i.dtype == "bfloat16" else i.dtype)
            for i in graph.inputs}
    want = tefuse.build(graph, "llvm").run(**vals)[0]
    cg = tefuse.build(graph, "cuda")
    (k,) = cg.kernels
    assert _space(k.group).get(k.config_index)["vector"]
    got = cg.run(**vals)[0]
    np.testing.assert_array_equal(np.asarray(got, np.float32), np.asarray(want, np.float32))


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_a_pixel_a_thread_gives_llvms_values(layout, rng):
    graph = _planar_resize(3, layout)
    vals = {"img": rng.integers(0, 256, (40, 50, 3), dtype=np.uint8),
            "rects": np.array([[0, 0, 50, 40], [3, 7, 20, 9]], np.int32)}
    want = tefuse.build(graph, "llvm").run(**vals)[0]
    cg = tefuse.build(graph, "cuda")
    (k,) = cg.kernels
    assert _space(k.group).get(k.config_index)["pixel"]
    np.testing.assert_allclose(cg.run(**vals)[0], want, rtol=0, atol=1e-5)
