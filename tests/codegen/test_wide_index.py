"""Tensors past 2^31 - 1 elements: index arithmetic goes 64-bit, decided at build from the
extents, so no offset wraps (a wrapped int32 offset read and wrote the wrong elements, and
a relu of such a tensor came back as zeros). Ordinary kernels keep int32 indices."""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse import GraphBuilder
from tefuse.codegen.lower import index_dtype, lower_group
from tefuse.fusion import fuse_graph
from tefuse.ops.value import dim_hints, dim_limits

BIG = (2, 2**30 + 8)  # 2^31 + 16 elements, each dim well inside int32


def _relu_group(shape, dtype="int8"):
    b = GraphBuilder()
    (g,) = fuse_graph(b.build(b.relu(b.input("x", shape, dtype))))
    return g


def _buffer_dtypes(func) -> set[str]:
    """The index types of the kernel's buffer shapes and loops, as its TVMScript shows them."""
    script = func.script()
    head = next(ln for ln in script.splitlines() if ln.startswith("def main("))
    loops = [ln for ln in script.splitlines() if "T.grid(" in ln]
    return {"int64" if "T.int64(" in ln else "int32" for ln in [head, *loops]}


@pytest.mark.parametrize("shape,want", [((4, 1024), "int32"), ((2**31 - 1,), "int32"), (BIG, "int64"),
                                        ((65537, 32768), "int64"), ((1, 2, 32768, 32769), "int64")])
def test_index_type_follows_the_largest_extent(shape, want):
    g = _relu_group(shape)
    assert index_dtype(g) == want
    assert _buffer_dtypes(lower_group(g).func) == {want}


def test_wide_lowering_of_a_reshape_past_int32():
    """A reshape's flat index is past 2^31 for the last rows: lowering must not fold it to int32."""
    b = GraphBuilder()
    x = b.input("x", BIG, "int8")
    (g,) = fuse_graph(b.build(b.relu(b.reshape(x, shape=(4, BIG[1] // 2)))))
    assert _buffer_dtypes(lower_group(g).func) == {"int64"}


def test_relu_of_a_tensor_past_2_to_the_31_elements_on_cpu():
    """About 6 GB at the peak: the input, its device copy and the output."""
    cg = tefuse.build(_big_relu(), "llvm")
    a = np.full(BIG, -1, np.int8)
    planted = {(0, 0): 5, (0, BIG[1] - 1): 6, (1, 0): 7, (1, 2**30 - 8): 8, (1, BIG[1] - 1): 9}
    for pos, v in planted.items():  # around the 2^31 boundary (row 1 starts at 2^30 + 8)
        a[pos] = v
    out = np.empty(BIG, np.int8)
    cg.run(a, out=[out])
    del a
    assert np.count_nonzero(out) == len(planted)
    assert {pos: int(out[pos]) for pos in planted} == planted


def _big_relu():
    b = GraphBuilder()
    return b.build(b.relu(b.input("x", BIG, "int8")))


def _symbolic_relu_group(rows=2**24, dtype="int8"):
    b = GraphBuilder()
    (g,) = fuse_graph(b.build(b.relu(b.input("x", ("N", rows), dtype))))
    return g


@pytest.mark.parametrize("limits,want", [({"N": (1, 64)}, "int32"), ({"N": (1, 127)}, "int32"),
                                         ({"N": (1, 128)}, "int64"), ({}, "int64")])
def test_a_symbolic_dim_is_int32_where_its_range_keeps_every_tensor_under_2_to_the_31(limits, want):
    """x [N, 2^24]: 2^31 - 2^24 elements at N = 127, 2^31 at N = 128; a dim without a known
    range keeps 64-bit indices."""
    g = _symbolic_relu_group()
    with dim_limits(limits), dim_hints({"N": 1}):
        assert index_dtype(g) == want
        func = lower_group(g).func
    script = func.script()
    # the dim variable itself: TVMScript declares an int32 one, an int64 one is its default
    assert ("N = T.int32()" in script) == (want == "int32") and ("T.int32" in script) == (want == "int32")
    assert _buffer_dtypes(func) == {want}


def test_a_symbolic_group_with_an_int64_tensor_keeps_int64_indices():
    with dim_limits({"N": (1, 8)}):
        assert index_dtype(_symbolic_relu_group(16, "int64")) == "int64"
        assert index_dtype(_symbolic_relu_group(16, "int32")) == "int32"
