"""reduce_sum/mean/max/min over axes with keepdims; softmax and log_softmax."""
from __future__ import annotations

import numpy as np
import pytest

from tests.reference import Const, assert_close, log_softmax, run_op, softmax

NP = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}


@pytest.mark.parametrize("kind", list(NP))
@pytest.mark.parametrize("axes", [None, (0,), (1,), (-1,), (0, 2), (2, -3), (1, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduce(rng, kind, axes, keepdims):
    x = rng.standard_normal((3, 4, 5)).astype("float32")
    y = run_op(f"reduce_{kind}", x, axes=axes, keepdims=keepdims)
    ref = NP[kind](x.astype(np.float64), axis=axes, keepdims=keepdims)
    assert_close(y, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", list(NP))
def test_reduce_float16(rng, kind):
    x = rng.standard_normal((4, 64)).astype("float16")
    y = run_op(f"reduce_{kind}", x, axes=(1,))
    assert y.dtype == np.float16
    assert_close(y, NP[kind](x.astype(np.float64), axis=1), "float16", rtol=1e-2, atol=3e-2)


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax(rng, op, axis):
    x = (rng.standard_normal((3, 4, 5)) * 5).astype("float32")
    x[0, 0, 0] = 80.0  # stability: exp(80) overflows float32 without the max shift
    ref = (softmax if op == "softmax" else log_softmax)(x, axis=axis)
    assert_close(run_op(op, x, axis=axis), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_float16(rng, op):
    x = rng.standard_normal((4, 16)).astype("float16")
    y = run_op(op, x)
    assert y.dtype == np.float16
    assert_close(y, (softmax if op == "softmax" else log_softmax)(x), "float16")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_softmax_sums_in_float32(dtype):
    """4096 equal scores: each is 1/4096. Summed in fp16 the total stops at 2048 (2048 + 1 rounds
    back to 2048), giving 1/2048; precision.py leaves softmax in fp16 relying on this."""
    import ml_dtypes

    npd = np.float16 if dtype == "float16" else ml_dtypes.bfloat16
    y = run_op("softmax", np.zeros((2, 4096), npd)).astype(np.float32)
    np.testing.assert_allclose(y, np.full((2, 4096), 1 / 4096, np.float32), rtol=4e-3)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_softmax_over_the_first_valid_elements_writes_zeros_after(rng, dtype):
    """valid=5 of 8 (graph/attention_keys.py's padded scores): the padding, however large, takes
    no part, and comes out 0."""
    x = rng.standard_normal((3, 8)).astype(dtype)
    x[:, 5:] = 30.0
    y = run_op("softmax", x, axis=-1, valid=5)
    assert_close(y[:, :5], softmax(x[:, :5], axis=-1), dtype)
    np.testing.assert_array_equal(y[:, 5:], 0)


@pytest.mark.parametrize("valid", [9, -1])
def test_softmax_valid_outside_the_axis_is_one_clear_error(valid):
    from tefuse.errors import GraphError

    with pytest.raises(GraphError, match=rf"softmax: valid={valid} outside 1\.\.8"):
        run_op("softmax", np.zeros((2, 8), np.float32), valid=valid)


def test_softmax_without_valid_keeps_its_attributes_and_workload_key():
    """`valid` is optional: a softmax without it normalizes to what it did before the attribute
    existed, so shipped and users' tuning records keep matching (the key hashes the attributes)."""
    from tefuse.graph import GraphBuilder

    b = GraphBuilder()
    p = b.softmax(b.input("x", (2, 5, 8), "float16"), axis=-1)
    assert p.attrs == {"axis": -1}
    geo = b.softmax(b.input("y", (2, 5, 8), "float16"), axis=-1, valid=7).geometry
    assert (geo.rows, geo.extent) == (10, 7)


MAPPED = {"prod": np.prod, "l1": lambda x, **k: np.abs(x).sum(**k), "l2": lambda x, **k: np.sqrt((x * x).sum(**k)),
          "sum_square": lambda x, **k: (x * x).sum(**k), "log_sum": lambda x, **k: np.log(x.sum(**k))}


@pytest.mark.parametrize("kind", list(MAPPED))
@pytest.mark.parametrize("axes,keepdims", [(None, False), ((1,), True), ((0, 2), False), ((-1,), True)])
def test_mapped_reduce(rng, kind, axes, keepdims):
    x = rng.uniform(0.6, 1.4, (3, 4, 5)) * (1 if kind == "log_sum" else rng.choice([-1, 1], (3, 4, 5)))
    x = x.astype("float32")
    y = run_op(f"reduce_{kind}", x, axes=axes, keepdims=keepdims)
    assert_close(y, MAPPED[kind](x.astype(np.float64), axis=axes, keepdims=keepdims), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["prod", "l2"])
def test_mapped_reduce_float16_accumulates_in_float32(kind):
    """512 values of 16: their sum of squares (131072) is past fp16's 65504, their L2 norm (362)
    is not; 0.99^512 multiplied in fp16 would drift by some 10% (a rounding a step)."""
    x = np.full((2, 512), 16.0 if kind == "l2" else 0.99, np.float16)
    y = run_op(f"reduce_{kind}", x, axes=(1,))
    assert_close(y, MAPPED[kind](x.astype(np.float64), axis=1), "float16", rtol=2e-3, atol=0)


@pytest.mark.parametrize("kind", ["prod", "l1", "sum_square", "l2"])
def test_mapped_reduce_integers(rng, kind):
    x = rng.integers(-4, 5, (3, 6)).astype("int32")
    want = MAPPED[kind](x.astype(np.float64), axis=1).astype("int32")
    np.testing.assert_array_equal(run_op(f"reduce_{kind}", x, axes=(1,)), want)


@pytest.mark.parametrize("kind", list(MAPPED))
def test_mapped_reduce_builds_for_cuda(kind):
    """Compile only: the cross-thread template takes the product's reducer and the post-maps."""
    import tefuse
    from tefuse.codegen.ptx import cuda_kernel_names

    b = tefuse.GraphBuilder()
    cg = tefuse.build(b.build(b.op(f"reduce_{kind}", b.input("x", (64, 1024), "float16"), axes=(1,))), "cuda")
    (k,) = cg.kernels
    assert k.template == "cuda_cross_thread_reduction" and len(cuda_kernel_names(k.source("cuda"))) == 1


def group_norm(x, groups, scale, bias, eps=1e-5):
    """float64 group normalisation of x [N, C, ...], scale/bias per channel or per group, as the
    op's row view [N, groups, C/groups * spatial]."""
    n, c = x.shape[:2]
    rows = x.reshape(n, groups, -1).astype(np.float64)
    y = ((rows - rows.mean(-1, keepdims=True)) / np.sqrt(rows.var(-1, keepdims=True) + eps)).reshape(x.shape)
    if scale.shape[0] != c:
        scale, bias = np.repeat(scale, c // groups), np.repeat(bias, c // groups)
    shape = (1, c) + (1,) * (x.ndim - 2)
    return (y * scale.reshape(shape) + bias.reshape(shape)).reshape(n, groups, -1)


GROUP_NORM = [((2, 6, 3, 4), 3, "channel"), ((2, 6, 3, 4), 3, "group"), ((2, 6, 5), 6, "channel"),
              ((3, 4), 2, "channel"), ((1, 8, 2, 1, 3), 2, "group"), ((2, 4, 1, 3), 4, "channel"),
              ((1, 6, 7, 7), 1, "group")]


@pytest.mark.parametrize("shape,groups,per", GROUP_NORM, ids=[f"{'x'.join(map(str, s))}_g{g}_{p}"
                                                              for s, g, p in GROUP_NORM])
def test_group_norm_rows(rng, shape, groups, per):
    x = (rng.standard_normal(shape) * 3 + 1).astype("float32")
    k = shape[1] if per == "channel" else groups
    scale, bias = (rng.standard_normal(k).astype("float32") for _ in range(2))
    y = run_op("group_norm_rows", x, Const(scale), Const(bias), groups=groups, epsilon=1e-3)
    assert_close(y, group_norm(x, groups, scale, bias, eps=1e-3), rtol=1e-5, atol=2e-6)


def test_group_norm_rows_float16_keeps_float32_statistics(rng):
    """An offset of 300 over rows of 2048: the sum (600k) and the centred squares would overflow
    or lose the variance in fp16."""
    x = (rng.standard_normal((2, 8, 16, 16)) + 300).astype("float16")
    scale, bias = np.ones(8, "float16"), np.zeros(8, "float16")
    y = run_op("group_norm_rows", x, scale, bias, groups=2)
    assert y.dtype == np.float16
    assert_close(y, group_norm(x, 2, scale, bias), "float16", rtol=1e-2, atol=2e-2)


@pytest.mark.parametrize("groups,scale_len,match", [(4, 6, r"groups=4 must be a positive integer dividing the 6"),
                                                    (3, 4, r"scale must have shape \(6,\) \(per channel\) or \(3,\)"),
                                                    (0, 6, "groups=0")])
def test_group_norm_rows_refuses_bad_groups_and_parameters(groups, scale_len, match):
    import tefuse

    with pytest.raises(tefuse.GraphError, match=match):
        run_op("group_norm_rows", np.zeros((1, 6, 2, 2), "float32"), np.ones(scale_len, "float32"),
               np.ones(scale_len, "float32"), groups=groups)


def test_group_norm_rows_is_one_norm_kernel_on_cuda():
    """Compile only: the row-wise "norm" template (layer_norm's) takes it, one kernel whose two
    row statistics are cross-thread reductions."""
    import tefuse
    from tefuse.codegen.ptx import cuda_kernel_names

    b = tefuse.GraphBuilder()
    x = b.input("x", (2, 64, 32, 32), "float16")
    scale = b.const(np.ones(64, "float16"))
    cg = tefuse.build(b.build(b.op("group_norm_rows", x, scale, scale, groups=32)), "cuda")
    (k,) = cg.kernels
    assert k.template == "cuda_cross_thread_reduction"
    src = k.source("cuda")
    assert len(cuda_kernel_names(src)) == 1 and "__shfl_down_sync" in src and "rsqrtf" in src
