"""How low-precision values live in a tefuse graph: one byte a value, and what type those bytes hold.

float8 (4 variants), float4_e2m1fn and float8_e8m0fnu values are their bit patterns in uint8
tensors; int4/uint4/int2/uint2 values are their values in int8/uint8 tensors (numpy/ml_dtypes
keep one value a byte too, where TVM would pack them). The kernels only ever see the storage
type. What a node's bytes hold (its *logical* dtype) is known from the node itself:

    an input or constant     its attrs["logical_dtype"] (set by GraphBuilder.input / .const)
    int_wrap / fp_encode     the integer width / float format the op converts to (ops/lowbit.py)
    anything else            its dtype

so the runtime can take and give ml_dtypes arrays at the graph's edge (`to_storage` /
`from_storage`) whatever passes ran in between: a rewritten graph keeps these nodes' attrs.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..ops.lowbit import INT_BITS, STORAGE

FLOATS = frozenset(k for k in STORAGE if k.startswith("float"))
LOGICAL = "logical_dtype"  # the attr of an input/constant node whose storage holds a low-precision type


def is_lowbit(dtype: Any) -> bool:
    return str(dtype) in STORAGE


def storage_dtype(dtype: Any) -> str:
    return STORAGE.get(str(dtype), str(dtype))


def _int_name(attrs: dict) -> str:
    return f"{'' if attrs['signed'] else 'u'}int{int(attrs['bits'])}"


# op -> the low-precision type its output holds, from its attrs (registry keyed by op)
HOLDS: dict[str, Callable[[dict], str]] = {
    "int_wrap": _int_name,
    "fp_encode": lambda attrs: str(attrs["format"]),
    "quantize_linear": lambda attrs: str(attrs["dtype"]),
    "requantize": lambda attrs: str(attrs["dtype"]),
}


def logical_dtype(node) -> str:
    """The type a node's values are, as a user holds them: int4 for an int4 Cast's int8 storage."""
    rule = HOLDS.get(node.op)
    if rule is not None:
        name = rule(node.attrs)
        return name if name in STORAGE else node.dtype
    return str(node.attrs.get(LOGICAL, node.dtype)) if not node.is_op else node.dtype


def to_storage(arr) -> np.ndarray:
    """A numpy array of a low-precision type as tefuse holds it (others unchanged)."""
    a = np.asarray(arr)
    name = str(a.dtype)
    if name in FLOATS:
        return a.view(np.uint8)
    if name in STORAGE:
        return a.astype(STORAGE[name])
    return a


def from_storage(arr: np.ndarray, dtype: Any) -> np.ndarray:
    """tefuse's storage of a `dtype` value back as that numpy (ml_dtypes) type."""
    dtype = str(dtype)
    if dtype not in FLOATS and dtype not in STORAGE:  # every run's float32 outputs: nothing to do
        return arr
    import ml_dtypes

    if dtype in FLOATS:
        return np.asarray(arr).view(getattr(ml_dtypes, dtype))
    if dtype in STORAGE:
        return np.asarray(arr).astype(getattr(ml_dtypes, dtype))
    return arr
