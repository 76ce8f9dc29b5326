"""8-bit constant vectors as int32 lanes (passes/byte_vectors.py), on TIR."""
from __future__ import annotations

import numpy as np
import pytest
from tvm import tirx
from tvm.script import tirx as T
from tvm_ffi import structural_equal, structural_walk

from tefuse.ops.value import expr_dtype
from tefuse.schedules.cuda.passes.byte_vectors import pack_byte_vectors


def _fill(dtype: str, lanes: int, value):
    c = tirx.const(value, dtype)

    @T.prim_func
    def f(s: T.Buffer((64,), dtype)):
        s[T.Ramp(0, 1, lanes)] = T.Broadcast(c, lanes)
    return f


@pytest.mark.parametrize("dtype,value", [("int8", -128), ("int8", 5), ("uint8", 200)])
@pytest.mark.parametrize("lanes", [8, 16])
def test_a_byte_broadcast_becomes_the_same_bytes_in_int32_lanes(dtype, value, lanes):
    out = pack_byte_vectors(_fill(dtype, lanes, value))
    found = []
    structural_walk(out.body, [(tirx.Broadcast, found.append)])
    (b,) = found
    assert expr_dtype(b.value) == "int32" and int(b.lanes) == lanes // 4
    word = np.array([int(b.value.value)], np.int32).view(np.dtype(dtype))
    np.testing.assert_array_equal(word, np.full(4, value, dtype))


@pytest.mark.parametrize("dtype,lanes", [("int8", 4), ("float16", 8), ("int32", 4)])
def test_other_broadcasts_are_left_as_they_are(dtype, lanes):
    f = _fill(dtype, lanes, 1)
    assert structural_equal(pack_byte_vectors(f), f)
