"""arange and dims (tefuse/ops/creation.py): tensors made from sizes, symbolic ones included,
built once for llvm and run at several sizes."""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse import GraphBuilder
from tefuse.errors import TefuseError


def test_arange_counts_to_a_symbolic_length():
    b = GraphBuilder()
    x = b.input("x", ("S",), "int64")
    r = b.op("arange", b.const(np.asarray(5, np.int64), name="start"), length=x.shape[0], delta=3)
    cg = tefuse.build(b.build(b.add(x, r)), "llvm", dynamic={"S": "1:4:8"})
    for s in (1, 4, 8):
        np.testing.assert_array_equal(cg.run({"x": np.zeros(s, np.int64)})[0], 5 + 3 * np.arange(s))


def test_dims_reads_a_shape_as_data():
    """A model's `seq_len * positions`: the dims' values computed in the kernel that reads them
    (whose other operands bind the dims)."""
    b = GraphBuilder()
    x = b.input("x", ("N", "S"), "int64")
    zero = b.const(np.asarray(0, np.int64), name="zero")
    seq = b.op("dims", zero, values=(x.shape[1],), shape=())
    both = b.op("dims", zero, values=(x.shape[0] * x.shape[1], 7), shape=(2,))
    cg = tefuse.build(b.build(b.add(b.mul(x, seq), b.op("take", both, b.const(np.asarray(0, np.int64), name="i")))),
                      "llvm", dynamic={"N": "1:2:4", "S": "1:3:8"})
    for n, s in ((1, 1), (4, 8)):
        x = np.arange(n * s, dtype=np.int64).reshape(n, s)
        np.testing.assert_array_equal(cg.run({"x": x})[0], x * s + n * s)


def test_a_slice_to_a_symbolic_end_must_stay_inside_its_axis():
    def graph():
        b = GraphBuilder()
        x = b.input("x", ("S",), "float32")
        table = b.const(np.arange(16, dtype=np.float32), name="table")
        return b.build(b.add(x, b.op("slice", table, starts=(0,), ends=(x.shape[0],), axes=(0,))))

    cg = tefuse.build(graph(), "llvm", dynamic={"S": "1:4:16"})
    np.testing.assert_array_equal(cg.run({"x": np.zeros(5, np.float32)})[0], np.arange(5))
    with pytest.raises(TefuseError, match="past the axis's 16"):
        tefuse.build(graph(), "llvm", dynamic={"S": "1:4:32"})
