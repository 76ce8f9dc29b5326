"""take, gather_elements, gather_nd, one_hot, argmax/argmin, topk, scatter_nd, scatter_elements
against numpy and onnx.reference; out-of-range indices never read out of bounds; fusion of a
lookup with what follows; CUDA builds (compile only)."""
from __future__ import annotations

import numpy as np
import pytest
from onnx.reference.ops.op_gathernd import _gather_nd_impl
from onnx.reference.ops.op_scatter_elements import scatter_elements as ref_scatter_elements
from onnx.reference.ops.op_scatternd import _scatter_nd_impl

import tefuse
from tefuse.errors import GraphError
from tests.reference import Const, build_op, run_op


def wrapped(idx, dim):
    """numpy's view of ONNX indices: negative ones from the end, out-of-range ones clamped (what
    the ops document for a run-time index outside [-dim, dim))."""
    idx = np.asarray(idx).astype(np.int64)
    return np.clip(np.where(idx < 0, idx + dim, idx), 0, dim - 1)


# -- take ------------------------------------------------------------------------------------
@pytest.mark.parametrize("axis, idx_dtype", [(0, "int64"), (1, "int32"), (-1, "int64")])
def test_take_matches_numpy_along_any_axis(rng, axis, idx_dtype):
    data = rng.standard_normal((5, 4, 3)).astype("float32")
    dim = data.shape[axis]
    idx = rng.integers(-dim, dim, (2, 3)).astype(idx_dtype)
    y = run_op("take", data, idx, axis=axis)
    np.testing.assert_array_equal(y, np.take(data, wrapped(idx, dim), axis=axis))


def test_take_from_a_constant_table_with_scalar_and_int8_indices(rng):
    table = rng.standard_normal((10, 6)).astype("float16")
    np.testing.assert_array_equal(run_op("take", Const(table), np.array(-3, np.int64)), table[7])
    idx = np.array([[9, 0, 2]], np.int8)
    np.testing.assert_array_equal(run_op("take", Const(table), idx), table[idx])


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint64"])
def test_narrow_and_unsigned_indices_into_a_long_axis(rng, dtype):
    """An int8 -1 into 300 rows is row 299 (widened before wrapping, no int8 overflow)."""
    table = rng.standard_normal((300, 2)).astype("float32")
    idx = np.array({"int8": [-1, -128, 5, 127], "uint8": [255, 0, 7, 200], "int16": [-300, 299, -1, 300],
                    "uint64": [299, 0, 300, np.iinfo(np.uint64).max]}[dtype], dtype)
    np.testing.assert_array_equal(run_op("take", Const(table), idx), table[wrapped(idx, 300)])


def test_out_of_range_indices_read_the_nearest_end_never_out_of_bounds(rng):
    """onnxruntime refuses them at run time; a kernel cannot, so its reads are clamped: far past
    either end (int64 extremes included) they read the last / first element."""
    table = rng.standard_normal((4, 3)).astype("float32")
    idx = np.array([4, 1000, -5, -1000, np.iinfo(np.int64).max, np.iinfo(np.int64).min], np.int64)
    y = run_op("take", Const(table), idx)
    np.testing.assert_array_equal(y, table[[3, 3, 0, 0, 3, 0]])


def test_take_refuses_float_indices_by_name():
    with pytest.raises(GraphError, match="take: indices must be an integer tensor, got float32"):
        run_op("take", np.zeros((3, 2), np.float32), np.zeros(2, np.float32))


def test_an_embedding_lookup_and_the_position_add_are_read_inside_layer_norms_kernel(rng):
    """take + add is layer_norm's prologue (fusion/fuse_ops.py: PROLOGUE_OPAQUE): the row-wise
    norm computes the lookup in its row reads, one kernel, no sum written and read back."""
    b = tefuse.GraphBuilder()
    ids = b.input("ids", (2, 8), "int64")
    table = rng.standard_normal((50, 16)).astype("float32")
    pos = rng.standard_normal((8, 16)).astype("float32")
    g, beta = rng.standard_normal(16).astype("float32"), rng.standard_normal(16).astype("float32")
    x = b.add(b.take(b.const(table, name="table"), ids), b.const(pos, name="pos"))
    y = b.layer_norm(x, b.const(g, name="g"), b.const(beta, name="beta"), epsilon=1e-5)
    cg = tefuse.build(b.build(y), "llvm")
    assert [[n.op for n in k.group.nodes] for k in cg.kernels] == [["take", "add", "layer_norm"]]
    i = rng.integers(0, 50, (2, 8))
    e = table[i] + pos
    ref = (e - e.mean(-1, keepdims=True)) / np.sqrt(e.var(-1, keepdims=True) + 1e-5) * g + beta
    np.testing.assert_allclose(cg.run(i)[0], ref, rtol=1e-4, atol=1e-5)


# -- gather_elements, gather_nd ----------------------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_gather_elements_matches_take_along_axis(rng, axis):
    data = rng.standard_normal((3, 4, 5)).astype("float32")
    shape = list(data.shape)
    shape[axis] = 6
    shape[(axis + 1) % 3] -= 1  # smaller than data off the axis
    dim = data.shape[axis]
    idx = rng.integers(-dim, dim, shape)
    y = run_op("gather_elements", data, idx, axis=axis)
    sub = data[tuple(slice(0, s) if a != axis % 3 else slice(None) for a, s in enumerate(shape))]
    np.testing.assert_array_equal(y, np.take_along_axis(sub, wrapped(idx, dim), axis=axis))


def test_gather_elements_refuses_indices_larger_than_data_off_the_axis():
    with pytest.raises(GraphError, match="gather_elements: indices .* fit data"):
        run_op("gather_elements", np.zeros((2, 3), np.float32), np.zeros((3, 3), np.int64), axis=1)


@pytest.mark.parametrize("data_shape, idx_shape, batch_dims", [
    ((4, 3, 2), (5, 1), 0), ((4, 3, 2), (2, 2), 0), ((4, 3, 2), (2, 6, 3), 0),
    ((4, 3, 2), (4, 1), 1), ((4, 3, 2), (4, 5, 2), 1), ((2, 3, 4, 5), (2, 3, 2, 1), 2)])
def test_gather_nd_matches_onnx_reference(rng, data_shape, idx_shape, batch_dims):
    data = rng.standard_normal(data_shape).astype("float32")
    k = idx_shape[-1]
    dims = np.array(data_shape[batch_dims:batch_dims + k])
    idx = (rng.integers(0, 1 << 20, idx_shape) % (2 * dims)) - dims  # in [-dim, dim)
    y = run_op("gather_nd", data, idx, batch_dims=batch_dims)
    np.testing.assert_array_equal(y, _gather_nd_impl(data, np.where(idx < 0, idx + dims, idx), batch_dims)[0])


def test_gather_nd_clamps_out_of_range_indices():
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = run_op("gather_nd", data, np.array([[7, -9], [-1, 2]], np.int64))
    np.testing.assert_array_equal(y, [data[2, 0], data[2, 2]])


@pytest.mark.parametrize("idx_shape, batch_dims", [((2, 4), 0), ((3, 1), 1), ((3,), 1)])
def test_gather_nd_refuses_indices_that_do_not_address_the_data(idx_shape, batch_dims):
    with pytest.raises(GraphError, match="gather_nd"):
        run_op("gather_nd", np.zeros((2, 3), np.float32), np.zeros(idx_shape, np.int64), batch_dims=batch_dims)


# -- one_hot -------------------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1, -1, 2])
def test_one_hot_matches_numpy_including_negative_and_out_of_range_indices(axis):
    idx = np.array([[0, -1, 4], [5, -6, 2]], np.int64)  # depth 5: 5 and -6 are out of range
    values = np.array([-2.0, 3.5], np.float32)
    y = run_op("one_hot", idx, values, depth=5, axis=axis)
    hot = (np.where(idx < 0, idx + 5, idx)[..., None] == np.arange(5))
    ref = np.moveaxis(np.where(hot, values[1], values[0]), -1, axis % 3).astype(np.float32)
    np.testing.assert_array_equal(y, ref)


def test_one_hot_truncates_float_indices_and_takes_integer_values():
    y = run_op("one_hot", np.array([1.7, -0.5, 2.2], np.float32), np.array([0, 7], np.int32), depth=3)
    np.testing.assert_array_equal(y, [[0, 7, 0], [7, 0, 0], [0, 0, 7]])


# -- argmax / argmin ------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["max", "min"])
@pytest.mark.parametrize("axis, keepdims, last", [(0, True, False), (1, False, True), (-1, True, True),
                                                  (-1, False, False)])
def test_arg_reductions_match_numpy_with_ties(rng, kind, axis, keepdims, last):
    x = rng.integers(-3, 3, (4, 5, 6)).astype("float32")  # many ties
    y = run_op(f"arg{kind}", x, axis=axis, keepdims=keepdims, select_last_index=last)
    f = np.argmax if kind == "max" else np.argmin
    n = x.shape[axis]
    ref = n - 1 - f(np.flip(x, axis), axis=axis, keepdims=keepdims) if last else \
        f(x, axis=axis, keepdims=keepdims)
    assert y.dtype == np.int64
    np.testing.assert_array_equal(y, ref)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int8", "uint8", "int16", "int32", "uint32", "bool"])
def test_arg_reductions_of_other_types(rng, dtype):
    import ml_dtypes

    if dtype == "bool":
        x = rng.random((3, 40)) > 0.7
    elif dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, (3, 40), dtype=dtype, endpoint=True)
        x[0, 5] = info.max
        x[1, 7] = info.min
    else:
        x = rng.standard_normal((3, 40)).astype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)
        x[2, 3] = -0.0
    for kind, f in (("max", np.argmax), ("min", np.argmin)):
        y = run_op(f"arg{kind}", x, axis=1, keepdims=False)
        np.testing.assert_array_equal(y, f(x.astype(np.float64) if dtype == "bfloat16" else x, axis=1))


def test_arg_reductions_find_nan_first_as_numpy():
    x = np.array([[1.0, np.nan, 5.0, np.nan], [-np.inf, 2.0, np.inf, 0.0]], np.float32)
    np.testing.assert_array_equal(run_op("argmax", x, axis=1, keepdims=False), np.argmax(x, axis=1))
    np.testing.assert_array_equal(run_op("argmin", x, axis=1, keepdims=False), np.argmin(x, axis=1))


def test_argmax_refuses_64_bit_inputs_by_name():
    with pytest.raises(GraphError, match="argmax: int64 input is not supported"):
        run_op("argmax", np.zeros((2, 3), np.int64))


# -- topk -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_topk_indices_follow_a_stable_sort(rng, largest, axis):
    x = rng.integers(-4, 4, (5, 7, 6)).astype("float32")  # ties: the lower index comes first
    k = 3
    y = run_op("topk", x, k=k, axis=axis, largest=largest)
    order = np.argsort(-x if largest else x, axis=axis, kind="stable")
    np.testing.assert_array_equal(y, np.take(order, range(k), axis=axis))


@pytest.mark.parametrize("dtype", ["uint64", "int64", "float16", "float64"])
def test_topk_of_other_types_and_special_floats(rng, dtype):
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        x = np.array([[info.max, 0, info.min, 5, info.max - 1]], dtype)
    else:
        x = np.array([[np.inf, -0.0, 0.0, -np.inf, 1.5, -2.0]], dtype)
    y = run_op("topk", x, k=x.shape[1], axis=1)
    np.testing.assert_array_equal(x[0, y[0]], np.sort(x[0])[::-1])


def test_topk_refuses_k_beyond_the_axis():
    with pytest.raises(GraphError, match=r"topk: k=5 outside 1\.\.4"):
        run_op("topk", np.zeros((2, 4), np.float32), k=5)


# -- scatters -------------------------------------------------------------------------------------
REDUCTIONS = ["none", "add", "mul", "max", "min"]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("idx, upd_shape", [
    (np.array([[1], [3], [-4]]), (3, 3, 2)),  # rows; -4 is row 0
    (np.array([[0, 1], [2, -1], [0, 1]]), (3, 2)),  # a duplicate
    (np.array([[[1, 2, 0]], [[3, 0, 1]]]), (2, 1)),  # elements
])
def test_scatter_nd_matches_onnx_reference(rng, reduction, idx, upd_shape):
    data = rng.standard_normal((4, 3, 2)).astype("float32")
    upd = rng.standard_normal(upd_shape).astype("float32")
    dims = np.array(data.shape[:idx.shape[-1]])
    pos = np.where(idx < 0, idx + dims, idx)
    y = run_op("scatter_nd", data, idx.astype(np.int64), upd, reduction=reduction)
    if reduction == "none":  # duplicates: the last write wins
        ref = data.copy()
        for m in np.ndindex(idx.shape[:-1]):
            ref[tuple(pos[m])] = upd[m]
    else:
        ref = _scatter_nd_impl(data, pos, upd, reduction=reduction)
    np.testing.assert_allclose(y, ref, rtol=1e-6)


def test_scatter_nd_drops_updates_at_out_of_range_indices():
    data = np.zeros((3, 2), np.float32)
    y = run_op("scatter_nd", data, np.array([[3], [-4], [1]], np.int64), np.ones((3, 2), np.float32))
    np.testing.assert_array_equal(y, [[0, 0], [1, 1], [0, 0]])


def test_half_scatter_add_sums_in_float32():
    """4096 updates of 0.5 onto one element: 2048. Summed in fp16 the total stops at 1024, where
    1024 + 0.5 rounds back to 1024."""
    y = run_op("scatter_nd", np.zeros(4, np.float16), np.zeros((4096, 1), np.int64), np.full(4096, 0.5, np.float16),
               reduction="add")
    assert y.dtype == np.float16
    np.testing.assert_array_equal(y, [2048, 0, 0, 0])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_scatter_elements_matches_onnx_reference(rng, reduction, axis):
    data = rng.standard_normal((4, 5)).astype("float32")
    shape = [3, 4]  # smaller than data on both axes
    dim = data.shape[axis]
    idx = rng.integers(-dim, dim, shape)
    upd = rng.standard_normal(shape).astype("float32")
    y = run_op("scatter_elements", data, idx, upd, axis=axis, reduction=reduction)
    ref = ref_scatter_elements(data, np.where(idx < 0, idx + dim, idx), upd, axis=axis % 2, reduction=reduction)
    if reduction == "none":  # onnx.reference writes in order too: the last duplicate wins
        np.testing.assert_array_equal(y, ref)
    else:
        np.testing.assert_allclose(y, ref, rtol=1e-6)


def test_scatter_elements_of_integers_with_max(rng):
    data = rng.integers(-50, 50, (3, 6)).astype(np.int32)
    idx = rng.integers(0, 6, (3, 4))
    upd = rng.integers(-100, 100, (3, 4)).astype(np.int32)
    y = run_op("scatter_elements", data, idx, upd, axis=1, reduction="max")
    np.testing.assert_array_equal(y, ref_scatter_elements(data, idx, upd, axis=1, reduction="max"))


@pytest.mark.parametrize("op, args, match", [
    ("scatter_nd", ((3, 2), (2, 1), (2, 3)), "do not fit data"),
    ("scatter_elements", ((3, 2), (2, 2), (2, 1)), "must have one shape"),
])
def test_scatters_refuse_mismatched_shapes_by_name(op, args, match):
    d, i, u = args
    with pytest.raises(GraphError, match=f"{op}: .*{match}"):
        run_op(op, np.zeros(d, np.float32), np.zeros(i, np.int64), np.zeros(u, np.float32))


def test_an_unknown_scatter_reduction_is_refused_by_name():
    with pytest.raises(GraphError, match="reduction must be one of none, add, mul, max, min, got 'sum'"):
        run_op("scatter_nd", np.zeros((3,), np.float32), np.zeros((1, 1), np.int64), np.zeros(1, np.float32),
               reduction="sum")


# -- CUDA (compile only) ---------------------------------------------------------------------------
CUDA_CASES = {
    "take": ("take", Const(np.zeros((100, 32), np.float16)), np.zeros((2, 8), np.int64)),
    "gather_elements": ("gather_elements", np.zeros((4, 3), np.float32), np.zeros((4, 2), np.int64)),
    "gather_nd": ("gather_nd", np.zeros((4, 3, 2), np.float32), np.zeros((4, 1), np.int64)),
    "one_hot": ("one_hot", np.zeros(3, np.int64), np.array([0, 1], np.float32)),
    "argmax": ("argmax", np.zeros((8, 1000), np.float32)),
    "argmin": ("argmin", np.zeros((8, 100), np.float16)),
    "topk": ("topk", np.zeros((8, 100), np.float32)),
    "scatter_nd": ("scatter_nd", np.zeros((4, 3), np.float16), np.zeros((3, 1), np.int64),
                   np.zeros((3, 3), np.float16)),
    "scatter_elements": ("scatter_elements", np.zeros((4, 3), np.float32), np.zeros((2, 3), np.int64),
                         np.zeros((2, 3), np.float32)),
}
CUDA_ATTRS = {"one_hot": {"depth": 5}, "topk": {"k": 5}, "scatter_nd": {"reduction": "mul"},
              "scatter_elements": {"reduction": "max"}, "argmin": {"select_last_index": True}}


@pytest.mark.parametrize("name", sorted(CUDA_CASES))
def test_indexing_ops_build_for_cuda(name):
    g, _ = build_op(*CUDA_CASES[name], **CUDA_ATTRS.get(name, {}))
    cg = tefuse.build(g, "cuda:sm_90", cache=None)
    assert cg.num_kernels == 1
    assert "__global__" in cg.kernels[0].device_source
