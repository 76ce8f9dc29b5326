"""CUDA kernels over a tensor past 2^31 - 1 elements (fp16, 4 GiB a tensor): 64-bit indices
(codegen/lower.py index_dtype) reach every element, around the 2^31 boundary included.

Deselected by default; run with  python -m pytest -m gpu tests/gpu/test_wide_index_gpu.py -q
"""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse import GraphBuilder

pytestmark = pytest.mark.gpu

BIG = (2, 2**30 + 8)  # 2^31 + 16 elements


def test_bias_relu_of_a_tensor_past_2_to_the_31_elements_on_cuda():
    b = GraphBuilder()
    x = b.input("x", BIG, "float16")
    cg = tefuse.build(b.build(b.relu(b.add(x, b.const(np.float16(1.0))))), "cuda")
    a = np.full(BIG, -3, np.float16)
    planted = {(0, 0): 5, (0, BIG[1] - 1): 6, (1, 0): 7, (1, 2**30 - 8): 8, (1, BIG[1] - 1): 9}
    for pos, v in planted.items():  # row 1 starts at element 2^30 + 8; (1, 2^30 - 8) is element 2^31
        a[pos] = v
    out = cg.run(a)[0]
    del a
    assert np.count_nonzero(out) == len(planted)
    assert {pos: float(out[pos]) for pos in planted} == {pos: v + 1.0 for pos, v in planted.items()}
