"""dense (x @ W^T) and matmul with numpy semantics: batched, broadcast, 1-D operands."""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tests.reference import Const, assert_close, run_op


@pytest.mark.parametrize("m,k,n", [(1, 8, 4), (5, 7, 3), (16, 32, 8)])
@pytest.mark.parametrize("const_w", [False, True])
def test_dense(rng, m, k, n, const_w):
    x = rng.standard_normal((m, k)).astype("float32")
    w = rng.standard_normal((n, k)).astype("float32")
    y = run_op("dense", x, Const(w) if const_w else w)
    assert_close(y, x.astype(np.float64) @ w.T.astype(np.float64), rtol=1e-5, atol=1e-5)


def test_dense_float16(rng):
    x = rng.standard_normal((4, 16)).astype("float16")
    w = (rng.standard_normal((8, 16)) * 0.3).astype("float16")
    y = run_op("dense", x, w)
    assert y.dtype == np.float16
    assert_close(y, x.astype(np.float64) @ w.T.astype(np.float64), "float16")


def test_dense_in_features_mismatch():
    with pytest.raises(tefuse.GraphError, match="in_features"):
        run_op("dense", np.zeros((2, 3), "float32"), np.zeros((4, 5), "float32"))


MATMUL = [
    ((3, 4), (4, 5)),
    ((2, 3, 4), (2, 4, 5)),
    ((2, 3, 4), (4, 5)),  # broadcast b over the batch
    ((4,), (4, 5)),  # 1-D left
    ((3, 4), (4,)),  # 1-D right
    ((4,), (4,)),  # dot -> 0-d
    ((2, 1, 3, 4), (5, 4, 2)),  # batch broadcast (2,1) x (5,) -> (2,5)
    ((4,), (2, 4, 3)),  # 1-D left with batch on the right
    ((2, 3, 4), (4,)),  # 1-D right with batch on the left
    ((1, 3, 4), (2, 4, 5)),
    ((7, 1, 4), (4, 5)),  # seq-first rows: one GEMM of 7 rows
    ((1, 7, 1, 4), (4, 5)),
    ((2, 7, 1, 4), (4, 5)),  # two batch dims: stays a batched matmul
]


def test_seq_first_matmul_is_one_gemm_over_the_rows():
    """[T, 1, K] @ [K, N] (torch's MultiheadAttention in-projection) computes as [T, K] @ [K, N]:
    a 2-D reduction, not T batched GEMVs."""
    b = tefuse.GraphBuilder()
    a = b.input("a", (197, 1, 64))
    g = b.build(b.op("matmul", a, b.input("w", (64, 96))))
    (group,) = tefuse.fuse_graph(g)
    from tefuse.codegen.lower import lower_group
    from tefuse.schedules.gpu.dense import gemm_dims
    lowered = lower_group(group)
    assert gemm_dims(lowered.info) == (1, 197, 96, 64)
    script = lowered.func.script()
    assert "matmul = T.sblock_alloc_buffer((197, 96))" in script  # rows x N, no batch dim
    assert 'T.axis.remap("SSR"' in script


@pytest.mark.parametrize("sa,sb", MATMUL, ids=[f"{a}@{b}" for a, b in MATMUL])
def test_matmul(rng, sa, sb):
    a = rng.standard_normal(sa).astype("float32")
    b = rng.standard_normal(sb).astype("float32")
    y = run_op("matmul", a, b)
    assert_close(y, np.matmul(a.astype(np.float64), b.astype(np.float64)), rtol=1e-5, atol=1e-5)


def test_matmul_float16(rng):
    a = rng.standard_normal((2, 3, 8)).astype("float16")
    b = (rng.standard_normal((8, 4)) * 0.3).astype("float16")
    y = run_op("matmul", a, b)
    assert y.dtype == np.float16
    assert_close(y, np.matmul(a.astype(np.float64), b.astype(np.float64)), "float16")


@pytest.mark.parametrize("sa,sb", [((3, 4), (5, 6)), ((2, 3, 4), (3, 4, 5))])
def test_matmul_bad_shapes(sa, sb):
    with pytest.raises(tefuse.GraphError, match="matmul"):
        run_op("matmul", np.zeros(sa, "float32"), np.zeros(sb, "float32"))
