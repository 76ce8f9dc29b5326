"""How ONNX's low-precision types live in a tefuse graph: one byte a value.

float8 (4 variants), FLOAT4E2M1 and FLOAT8E8M0 values are their bit patterns in uint8 tensors;
INT4/UINT4/INT2/UINT2 values are their values in int8/uint8 tensors (numpy/ml_dtypes keep one
value a byte too, where TVM would pack them). Only Cast, CastLike and Identity take such values
(through ops/lowbit.py's exact conversions); any other op is refused by name, so a bit pattern is
never computed on as a number. A model's inputs and outputs of these types are converted to and
from their storage at the edge (`to_storage` / `from_storage`; the onnx backend does it).
"""
from __future__ import annotations

import numpy as np

STORAGE = {"float8_e4m3fn": "uint8", "float8_e4m3fnuz": "uint8", "float8_e5m2": "uint8",
           "float8_e5m2fnuz": "uint8", "float4_e2m1fn": "uint8", "float8_e8m0fnu": "uint8",
           "int4": "int8", "uint4": "uint8", "int2": "int8", "uint2": "uint8"}
FLOATS = {k for k in STORAGE if k.startswith("float")}
INT_BITS = {"int4": (4, True), "uint4": (4, False), "int2": (2, True), "uint2": (2, False)}
TAKES_LOWBIT = {"Cast", "CastLike", "Identity"}


def is_lowbit(dtype: str) -> bool:
    return str(dtype) in STORAGE


def storage_dtype(dtype: str) -> str:
    return STORAGE.get(str(dtype), str(dtype))


def to_storage(arr) -> np.ndarray:
    """A numpy array of a low-precision type as tefuse holds it (others unchanged)."""
    a = np.asarray(arr)
    name = str(a.dtype)
    if name in FLOATS:
        return a.view(np.uint8)
    if name in STORAGE:
        return a.astype(STORAGE[name])
    return a


def from_storage(arr: np.ndarray, dtype: str) -> np.ndarray:
    """tefuse's storage of a `dtype` value back as that numpy (ml_dtypes) type."""
    import ml_dtypes

    dtype = str(dtype)
    if dtype in FLOATS:
        return np.asarray(arr).view(getattr(ml_dtypes, dtype))
    if dtype in STORAGE:
        return np.asarray(arr).astype(getattr(ml_dtypes, dtype))
    return arr
