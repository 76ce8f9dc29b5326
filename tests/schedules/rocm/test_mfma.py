"""The MFMA intrinsics' lane layout (schedules/rocm/mfma.py) against the instructions' as AMD's
CDNA3 ISA guide gives it, emulated in numpy: what the load intrinsics put in each lane, fed to
v_mfma_f32_16x16x16_f16 once or to v_mfma_f32_16x16x4_f32 once per slot, and written back by
the store intrinsic, is A @ B. (No AMD GPU here: this is the part llvm cannot run.)"""
from __future__ import annotations

import numpy as np
import pytest

from tefuse.schedules.rocm import mfma

LANES = range(mfma.LANES)


def _isa_16x16x16_f16(a, b, c):
    """Lane l: A[l % 16, 4 * (l // 16) + v], B[4 * (l // 16) + v, l % 16], D[4 * (l // 16) + v, l % 16]."""
    A, B = np.zeros((16, 16)), np.zeros((16, 16))
    for l in LANES:
        for v in range(4):
            A[l % 16, 4 * (l // 16) + v], B[4 * (l // 16) + v, l % 16] = a[l, v], b[l, v]
    return _acc(c, A @ B)


def _isa_16x16x4_f32(a, b, c):
    """Lane l: A[l % 16, l // 16], B[l // 16, l % 16] (one value each); D as above."""
    A, B = np.zeros((16, 4)), np.zeros((4, 16))
    for l in LANES:
        A[l % 16, l // 16], B[l // 16, l % 16] = a[l], b[l]
    return _acc(c, A @ B)


def _acc(c, d):
    return c + np.array([[d[4 * (l // 16) + v, l % 16] for v in range(4)] for l in LANES])


def _load(m, rows):
    return np.array([[m[rows(l, s)] for s in range(mfma.SLOTS)] for l in LANES])


@pytest.mark.parametrize("dtype", mfma.DTYPES)
def test_loads_instructions_and_store_compute_a_16x16x16_product(dtype):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((16, 16)), rng.standard_normal((16, 16))
    ra, rb = _load(a, mfma.rows_a), _load(b, mfma.rows_b)
    c = np.zeros((mfma.LANES, mfma.SLOTS))
    if mfma.MFMA[dtype][1] == 16:
        c = _isa_16x16x16_f16(ra, rb, c)
    else:  # as the float32 MMA intrinsic issues it: slot s of A and B to the s-th instruction
        for s in range(mfma.SLOTS):
            c = _isa_16x16x4_f32(ra[:, s], rb[:, s], c)
    out = np.zeros((16, 16))
    for l in LANES:
        for s in range(mfma.SLOTS):
            out[mfma.rows_b(l, s)] = c[l, s]  # the store intrinsic
    np.testing.assert_allclose(out, a @ b, rtol=1e-12, atol=1e-12)


def test_the_descriptions_layout_is_the_inverse_of_the_implementations():
    for l in LANES:
        for s in range(mfma.SLOTS):
            assert mfma.lane_a(*mfma.rows_a(l, s)) == (l, s)
            assert mfma.lane_b(*mfma.rows_b(l, s)) == (l, s)
            assert mfma.lane_c(*mfma.rows_b(l, s)) == (l, s)


def test_each_dtype_has_its_intrinsics():
    f16, f32 = mfma.register("float16"), mfma.register("float32")
    assert f16.mma != f32.mma and f16.load_a != f32.load_a and f16.store == f32.store
    assert mfma.MFMA["float32"] == ("llvm.amdgcn.mfma.f32.16x16x4f32", 4)
