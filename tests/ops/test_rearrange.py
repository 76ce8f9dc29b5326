"""expand, tile, depth_to_space, space_to_depth, trilu against numpy; refusals naming the op; the
lazy ops fusing with their consumers."""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tests.reference import run_op


def exact(y, ref):
    assert y.shape == ref.shape and y.dtype == ref.dtype, (y.shape, ref.shape, y.dtype, ref.dtype)
    np.testing.assert_array_equal(y, ref)


@pytest.mark.parametrize("src,shape", [((3, 1), (2, 1, 4)),  # both ways: (2, 3, 4)
                                       ((1, 4), (3, 1)), ((2, 3), (3,)), ((5,), (2, 1, 1)), ((2, 1, 3), (1, 1))])
def test_expand_broadcasts_both_ways(rng, src, shape):
    x = rng.standard_normal(src).astype("float32")
    exact(run_op("expand", x, shape=shape), x * np.ones(shape, "float32"))


def test_expand_int_and_bool(rng):
    x = rng.integers(-5, 5, (1, 3)).astype("int64")
    exact(run_op("expand", x, shape=(2, 3)), np.broadcast_to(x, (2, 3)))
    b = rng.random((3, 1)) > 0.5
    exact(run_op("expand", b, shape=(3, 4)), np.broadcast_to(b, (3, 4)))


def test_expand_refuses_what_does_not_broadcast():
    with pytest.raises(tefuse.GraphError, match=r"expand.*\(2, 3\), \(4,\) of expand's input and shape \[4\] "
                                                r"do not broadcast"):
        run_op("expand", np.zeros((2, 3), "float32"), shape=(4,))


@pytest.mark.parametrize("reps", [(2, 3), (1, 1), (3, 1), (1, 4)])
def test_tile(rng, reps):
    x = rng.standard_normal((2, 3)).astype("float32")
    exact(run_op("tile", x, repeats=reps), np.tile(x, reps))


def test_tile_unit_dims_and_rank():
    x = np.arange(3, dtype="int32").reshape(1, 3, 1)
    exact(run_op("tile", x, repeats=(2, 2, 3)), np.tile(x, (2, 2, 3)))
    with pytest.raises(tefuse.GraphError, match=r"tile: repeats must hold one non-negative int per axis \(3\)"):
        run_op("tile", x, repeats=(2, 2))


def _d2s(x, b, mode):
    n, c, h, w = x.shape
    if mode == "DCR":
        t = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        t = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return t.reshape(n, c // (b * b), h * b, w * b)


def _s2d(x, b, mode):
    n, c, h, w = x.shape
    t = x.reshape(n, c, h // b, b, w // b, b)
    t = t.transpose(0, 3, 5, 1, 2, 4) if mode == "DCR" else t.transpose(0, 1, 3, 5, 2, 4)
    return t.reshape(n, c * b * b, h // b, w // b)


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
@pytest.mark.parametrize("b", [2, 3])
def test_depth_to_space_and_back(rng, mode, b):
    x = rng.standard_normal((2, 2 * b * b, 3, 4)).astype("float32")
    y = run_op("depth_to_space", x, blocksize=b, mode=mode)
    exact(y, _d2s(x, b, mode))
    exact(run_op("space_to_depth", y, blocksize=b, mode=mode), _s2d(y, b, mode))
    np.testing.assert_array_equal(_s2d(y, b, mode), x)  # the references are each other's inverse


BLOCK_BAD = [("depth_to_space", (1, 6, 2, 2), dict(blocksize=2), "6 channels do not divide into blocks of 2x2"),
             ("space_to_depth", (1, 1, 3, 4), dict(blocksize=2), "spatial dims 3x4 do not divide"),
             ("depth_to_space", (4, 2, 2), dict(blocksize=2), "expects a 4-D NCHW input"),
             ("space_to_depth", (1, 1, 2, 2), dict(blocksize=2, mode="RCD"), "mode must be DCR or CRD")]


@pytest.mark.parametrize("op,shape,attrs,msg", BLOCK_BAD, ids=[b[0] + "-" + b[3].split()[0] for b in BLOCK_BAD])
def test_block_ops_refuse_bad_shapes(op, shape, attrs, msg):
    with pytest.raises(tefuse.GraphError, match=f"{op}: {msg}"):
        run_op(op, np.zeros(shape, "float32"), **attrs)


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("k", [0, 1, -2, 7, -9, 2 ** 40])
def test_trilu(rng, upper, k):
    x = rng.standard_normal((2, 4, 5)).astype("float32")
    exact(run_op("trilu", x, upper=upper, k=k), np.triu(x, k) if upper else np.tril(x, k))


def test_trilu_int_and_rank():
    x = np.arange(12, dtype="int64").reshape(3, 4) + 1
    exact(run_op("trilu", x, upper=False, k=-1), np.tril(x, -1))
    with pytest.raises(tefuse.GraphError, match="trilu: expects at least 2 dims"):
        run_op("trilu", np.zeros((3,), "float32"))


def test_rearranged_values_fuse_into_one_kernel(rng):
    """All lazy: a tile, a depth_to_space, a trilu and an add build as one kernel."""
    x = rng.standard_normal((1, 4, 2, 2)).astype("float32")
    b = tefuse.GraphBuilder()
    xi = b.input("x", x.shape)
    y = b.trilu(b.depth_to_space(b.tile(xi, repeats=(1, 1, 2, 1)), blocksize=2), upper=False)
    cg = tefuse.build(b.build(b.add(y, y)), "llvm")
    assert cg.num_kernels == 1
    exact(cg.run(x)[0], 2 * np.tril(_d2s(np.tile(x, (1, 1, 2, 1)), 2, "DCR")))
