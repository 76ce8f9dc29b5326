"""float8 operands of a matrix product (conv2d, dense, matmul) held as their uint8 codes: a QDQ
model's fp8 anchors (graph/qdq.py). The product widens each code to float32 by its exact decode
(ops/lowbit.py) where other products cast; the codes stay bytes up to the product, so a
tensor-core template moves them as byte tiles and its instruction reads them as e4m3 / e5m2
(schedules/cuda/intrin/wgmma.py)."""
from __future__ import annotations

from typing import Callable

from tvm import tirx as tir

from ..errors import OpError
from .lowbit import decode
from .value import product_dtypes

# matrix products' optional attrs: the float8 format uint8 operands encode, and whether the tensor
# cores may sum their whole reduction in their own accumulator (`fast_accumulation`)
CODES = {"codes": "", "fast_accum": False}
PRODUCT_CODES = ("float8_e4m3fn", "float8_e5m2")  # what Hopper's fp8 tensor cores multiply


def product_codes(attrs: dict) -> str:
    """The float8 format a product's uint8 operands encode, or "" for plain operands."""
    codes = str(attrs.get("codes") or "")
    if codes and codes not in PRODUCT_CODES:
        raise OpError(f"codes={codes!r}: a product's operands may encode {', '.join(PRODUCT_CODES)}")
    return codes


def fast_accumulation(attrs: dict) -> bool:
    """Whether a product of float8 codes may be summed whole in Hopper's fp8 accumulator (about
    14 bits of mantissa), as cuBLASLt's fast accumulation (torch._scaled_mm's use_fast_accum)
    does, instead of promoting each 128-deep row to float32: its value is the same float32 sum
    (what llvm computes), the tensor cores' error grows with the depth (0.7% of the largest
    output at 8192 on an H200). Only a product of codes takes it."""
    fast = bool(attrs.get("fast_accum"))
    if fast and not product_codes(attrs):
        raise OpError("fast_accum: only a product of float8 codes (codes=...) sums in the tensor cores' "
                      "fp8 accumulator")
    return fast


def operand_dtypes(dtype: str, attrs: dict) -> tuple[str, str]:
    """(accumulator, result) dtypes of a product of `dtype` operands: value.product_dtypes', or
    float32 both for float8 codes, whose operands must be uint8 and out_dtype float32 or unset."""
    if not product_codes(attrs):
        fast_accumulation(attrs)  # refused without codes
        return product_dtypes(dtype, attrs)
    if dtype != "uint8" or str(attrs.get("out_dtype") or "float32") != "float32":
        raise OpError(f"codes={product_codes(attrs)}: operands are uint8 codes summed in float32 "
                      f"(got {dtype}, out_dtype {attrs.get('out_dtype')!r})")
    return "float32", "float32"


def widen(attrs: dict, cast: Callable[[tir.PrimExpr], tir.PrimExpr]) -> Callable[[tir.PrimExpr], tir.PrimExpr]:
    """How the product widens an operand: `cast` (its own), or each code's decode."""
    codes = product_codes(attrs)
    return (lambda e: decode(codes, e)) if codes else cast
