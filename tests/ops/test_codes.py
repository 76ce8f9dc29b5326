"""Matrix products over float8 codes (ops/codes.py: uint8 operands with `codes`), on llvm against
numpy's float32 products of the decoded values (ml_dtypes): every code of both formats (zeros,
subnormals, the largest, NaN), in dense, matmul and a padded NHWC conv; bad attributes are one
clear error."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tefuse
from tefuse.errors import TefuseError
from tefuse.graph import GraphBuilder

FORMATS = ["float8_e4m3fn", "float8_e5m2"]


def _every_code(fmt: str) -> np.ndarray:
    """[256, 32] uint8: row i holds code i first (zeros, subnormals, the largest, NaN and inf
    among them), then finite codes, so a row's NaN or inf comes from its own code alone."""
    rng = np.random.default_rng(0)
    rest = rng.standard_normal((256, 31)).astype(getattr(ml_dtypes, fmt)).view(np.uint8)
    return np.concatenate([np.arange(256, dtype=np.uint8)[:, None], rest], axis=1)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("op", ["dense", "matmul"])
def test_products_of_every_code_equal_numpys(fmt, op):
    x = _every_code(fmt)
    w = np.random.default_rng(1).standard_normal((8, 32)).astype(getattr(ml_dtypes, fmt)).view(np.uint8)
    w = np.ascontiguousarray(w.T) if op == "matmul" else w
    b = GraphBuilder()
    y = b.op(op, b.input("x", x.shape, "uint8"), b.const(w, name="w"), codes=fmt)
    got = tefuse.build(b.build(y), "llvm").run(x=x)[0]
    xf, wf = (a.view(getattr(ml_dtypes, fmt)).astype(np.float32) for a in (x, w))
    with np.errstate(invalid="ignore"):
        want = xf @ (wf if op == "matmul" else wf.T)
    assert got.dtype == np.float32
    finite = np.isfinite(want).all(axis=1)
    assert finite.sum() == 256 - (8 if fmt == "float8_e5m2" else 2)  # all but the NaN (and inf) codes' rows
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-6, atol=1e-6 * np.abs(want[finite]).max())


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_padded_nhwc_conv_of_codes_equals_numpys(fmt):
    rng = np.random.default_rng(2)
    f8 = getattr(ml_dtypes, fmt)
    x = rng.standard_normal((2, 7, 7, 16)).astype(f8)
    w = (rng.standard_normal((3, 3, 16, 24)) * 0.3).astype(f8)
    b = GraphBuilder()
    y = b.op("conv2d", b.input("x", x.shape, "uint8"), b.const(w.view(np.uint8), name="w"), layout="NHWC",
             padding=1, codes=fmt)
    got = tefuse.build(b.build(y), "llvm").run(x=x.view(np.uint8))[0]
    xp = np.pad(x.astype(np.float32), ((0, 0), (1, 1), (1, 1), (0, 0)))
    wf = w.astype(np.float32)
    want = sum(np.einsum("nhwc,ck->nhwk", xp[:, i:i + 7, j:j + 7], wf[i, j]) for i in range(3) for j in range(3))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize("dtype,attrs,match", [
    ("int8", {"codes": "float8_e4m3fn"}, r"operands are uint8 codes summed in float32 \(got int8"),
    ("uint8", {"codes": "float8_e4m3fn", "out_dtype": "int32"}, r"out_dtype 'int32'"),
    ("uint8", {"codes": "float4_e2m1fn"}, r"codes='float4_e2m1fn': a product's operands may encode float8_e4m3fn, float8_e5m2"),
])
def test_bad_codes_are_one_clear_error(dtype, attrs, match):
    b = GraphBuilder()
    with pytest.raises(TefuseError, match=match):
        y = b.op("dense", b.input("x", (4, 32), dtype), b.const(np.zeros((8, 32), dtype), name="w"), **attrs)
        tefuse.build(b.build(y), "llvm")


def test_fast_accumulation_is_a_product_of_codes_only():
    """fast_accum (the tensor cores may sum the whole reduction in their fp8 accumulator) is an
    attribute of a float8 product; on another product it is one clear error."""
    b = GraphBuilder()
    with pytest.raises(TefuseError, match="fast_accum: only a product of float8 codes"):
        b.op("dense", b.input("x", (4, 32)), b.const(np.ones((8, 32), np.float32), name="w"), fast_accum=True)
    w = np.random.default_rng(1).standard_normal((8, 32)).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    b = GraphBuilder()
    y = b.op("dense", b.input("x", (4, 32), "uint8"), b.const(w, name="w"), codes="float8_e4m3fn", fast_accum=True)
    assert y.attrs["fast_accum"] is True and y.dtype == "float32"
