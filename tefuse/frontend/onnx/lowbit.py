"""ONNX's low-precision types in an imported graph (float8, float4, e8m0, int4, int2).

Their values live in one-byte storage with their type recorded on the graph (tefuse/graph/lowbit.py),
so `CompiledGraph.run` takes and returns them as ml_dtypes arrays. Only the ops below take such
values (through ops/lowbit.py's exact conversions, or the quantization ops' own reads); any other
op is refused by name, so a bit pattern is never computed on as a number.
"""
from __future__ import annotations

from ...graph.lowbit import FLOATS, INT_BITS, STORAGE, from_storage, is_lowbit, storage_dtype, to_storage

__all__ = ["FLOATS", "INT_BITS", "STORAGE", "TAKES_LOWBIT", "from_storage", "is_lowbit", "storage_dtype",
           "to_storage"]

TAKES_LOWBIT = {"Cast", "CastLike", "Identity", "DequantizeLinear", "QuantizeLinear"}  # (a zero point)
