"""The weight-layout pass: fp16/bf16 matmuls by a constant 2-D weight read it [N, K]."""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse.errors import GraphError
from tefuse.graph import GraphBuilder
from tefuse.graph.weights import transpose_matmul_weights


def _linear_pair(dtype, rng):
    """Two matmuls sharing one [K, N] weight, and one by a computed B (left alone)."""
    w = (rng.standard_normal((64, 96)) * 0.1).astype(dtype)
    b = GraphBuilder()
    x = b.input("x", (2, 197, 64), dtype)
    wc = b.const(w, name="w")
    y = b.add(b.matmul(x, wc), b.matmul(b.relu(x), wc))
    z = b.matmul(y, b.transpose(y, axes=(0, 2, 1)))  # B computed: stays [K, N]
    return b.build(z), w


def test_fp16_matmuls_read_one_transposed_copy_of_a_shared_weight():
    rng = np.random.default_rng(0)
    g, w = _linear_pair("float16", rng)
    got = transpose_matmul_weights(g)
    mms = [n for n in got.nodes if n.op == "matmul"]
    assert [bool(n.attrs.get("trans_b")) for n in mms] == [True, True, False]
    assert mms[0].inputs[1] is mms[1].inputs[1], "the shared weight was copied twice"
    np.testing.assert_array_equal(mms[0].inputs[1].value, w.T)
    x = rng.standard_normal((2, 197, 64)).astype("float16")
    want = tefuse.build(g, "llvm").run(x=x)[0].astype(np.float32)
    out = tefuse.build(got, "llvm").run(x=x)[0].astype(np.float32)
    assert np.abs(out - want).max() <= 1e-2 * np.abs(want).max()


def test_float32_matmuls_are_left_alone():
    g, _ = _linear_pair("float32", np.random.default_rng(1))
    assert transpose_matmul_weights(g) is g


def test_trans_b_needs_a_2d_weight():
    b = GraphBuilder()
    x, w = b.input("x", (2, 8, 16), "float16"), b.input("w", (2, 8, 16), "float16")
    with pytest.raises(GraphError, match=r"trans_b.*2-D b\[N, K\]"):
        b.matmul(x, w, trans_b=True)
