"""NaN and edge semantics as numpy and onnxruntime: NaN propagates through relu, relu6, clip,
maximum, minimum, reduce max/min, max-pool, global max-pool and a fused conv+relu; Clip with
min > max gives max; -inf survives max reductions; each rule stays one select in one pass."""
from __future__ import annotations

import re

import numpy as np
import pytest

import tefuse
from tests.reference import build_op, conv2d, pool2d, run_op

NAN = np.nan
X = np.array([NAN, -1.0, 2.0, 7.0, NAN, -np.inf, np.inf, -0.5], "float32")
Y = np.array([1.0, NAN, 3.0, NAN, NAN, 0.0, NAN, -2.0], "float32")


def same(got, want, rtol=1e-6, atol=0.0):
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{got} vs {want}")
    np.testing.assert_allclose(got[~np.isnan(want)], np.asarray(want)[~np.isnan(want)], rtol=rtol, atol=atol)


UNARY = {
    "relu": ({}, lambda x: np.maximum(x, 0)),
    "relu6": ({}, lambda x: np.minimum(np.maximum(x, 0), 6)),
    "clip": ({"min": -0.5, "max": 1.5}, lambda x: np.clip(x, -0.5, 1.5)),
    "clip_min_only": ({"min": 0.0}, lambda x: np.maximum(x, 0)),
    "clip_unbounded": ({}, lambda x: x),
    "clip_min_gt_max": ({"min": 2.0, "max": 1.0}, lambda x: np.minimum(np.maximum(x, 2.0), 1.0)),
    "hardsigmoid": ({}, lambda x: np.clip(x / 6 + 0.5, 0, 1)),
}


@pytest.mark.parametrize("case", sorted(UNARY))
def test_unary_nan_and_inf(case):
    attrs, ref = UNARY[case]
    with np.errstate(invalid="ignore"):
        same(run_op(case.split("_")[0] if case.startswith("clip") else case, X, **attrs), ref(X))


def test_clip_min_greater_than_max_is_max():
    """numpy and ONNX: min(max(x, lo), hi), so every value becomes max."""
    got = run_op("clip", np.array([-5.0, 1.5, 5.0], "float32"), min=2.0, max=1.0)
    np.testing.assert_array_equal(got, [1.0, 1.0, 1.0])
    assert (np.clip(np.array([-5.0, 1.5, 5.0]), 2.0, 1.0) == 1.0).all()


def test_clip_min_greater_than_max_is_max_in_chain_spec_and_fusion_plan():
    """Where min > max, clip gives max in ONNX and numpy: so must the chain spec and FusionPlan
    (ops/elemwise.py), which once gave min."""
    from tefuse.plan import FusionPlan, TensorDesc
    from tefuse.plan.spec import parse_chain

    x = X.reshape(1, 1, 2, 4)
    want = np.minimum(np.maximum(x, 2.0), 1.0)  # 1 everywhere, NaN kept
    same(tefuse.build(parse_chain("clip(min=2,max=1)", x.shape), "llvm").run(x)[0], want)
    p = FusionPlan(TensorDesc(x.shape))
    p.add_activation("clip", min=2.0, max=1.0)
    p.compile("llvm")
    same(p.execute(x, p.new_args()), want)


@pytest.mark.parametrize("op,ref", [("maximum", np.maximum), ("minimum", np.minimum)])
def test_binary_nan_either_side(op, ref):
    same(run_op(op, X, Y), ref(X, Y))
    same(run_op(op, Y, X), ref(Y, X))


@pytest.mark.parametrize("op,ref", [("maximum", np.maximum), ("minimum", np.minimum)])
def test_binary_integers_unchanged(op, ref):
    a = np.array([1, -5, 7, 0], "int32")
    b = np.array([2, -9, 7, -1], "int32")
    np.testing.assert_array_equal(run_op(op, a, b), ref(a, b))




@pytest.mark.parametrize("kind,ref", [("max", np.max), ("min", np.min)])
@pytest.mark.parametrize("pos", [0, 3, 7])
def test_reduce_nan_anywhere(kind, ref, pos):
    x = np.arange(24, dtype="float32").reshape(3, 8) - 10
    x[1, pos] = NAN
    same(run_op(f"reduce_{kind}", x, axes=(1,)), ref(x, axis=1))
    same(run_op(f"reduce_{kind}", x, axes=None), np.asarray(ref(x)))


@pytest.mark.parametrize("kind,ref,inf", [("max", np.max, -np.inf), ("min", np.min, np.inf)])
def test_reduce_of_infinities_is_infinite(kind, ref, inf):
    x = np.full((2, 4), inf, "float32")
    np.testing.assert_array_equal(run_op(f"reduce_{kind}", x, axes=(1,)), ref(x, axis=1))


def test_max_pool_nan_and_minus_inf():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 2, 6, 6)).astype("float32")
    x[0, 0, 1, 1] = NAN
    x[0, 1, 4, 5] = NAN
    x[0, 1, 0:2, 0:2] = -np.inf
    ref = pool2d(x.astype(np.float64), "max", (2, 2), (2, 2), (0, 0, 0, 0))
    same(run_op("max_pool2d", x, kernel=2, strides=2), ref)
    same(run_op("max_pool2d", x, kernel=3, strides=1, padding=1),
         pool2d(x.astype(np.float64), "max", (3, 3), (1, 1), (1, 1, 1, 1)))
    same(run_op("global_max_pool2d", x), np.max(x, axis=(2, 3), keepdims=True))


def test_conv_relu_fused_keeps_nan():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 3, 6, 6)).astype("float32")
    x[0, 1, 2, 2] = NAN
    w = rng.standard_normal((4, 3, 3, 3)).astype("float32")
    b = tefuse.GraphBuilder()
    xi = b.input("x", x.shape)
    g = b.build(b.relu(b.conv2d(xi, b.const(w), padding=1)))
    cg = tefuse.build(g, "llvm")
    assert len(cg.kernels) == 1
    with np.errstate(invalid="ignore"):
        ref = np.maximum(conv2d(x.astype(np.float64), w.astype(np.float64), padding=1), 0)
    assert np.isnan(ref).sum() == 4 * 9
    same(cg.run(x)[0], ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op,attrs,selects", [("relu", {}, 1), ("relu6", {}, 2), ("maximum", {}, 1)])
def test_generated_code_stays_one_pass(op, attrs, selects):
    """One kernel, one loop nest, the NaN rule as select(s): no extra isnan pass or buffer."""
    args = [np.zeros((4, 8), "float32")] * (2 if op == "maximum" else 1)
    g, _ = build_op(op, *args, **attrs)
    cg = tefuse.build(g, "llvm")
    src = cg.source("tir")
    assert len(cg.kernels) == 1
    assert src.count("T.Select(") == selects, src
    blocks = src.count('T.sblock("') - src.count('# with T.sblock("root")')
    assert blocks == 1, src  # one block: no second pass over the data
    assert src.count("T.isnan(") <= 1, src


# -- on CUDA: the same keyed reductions through the GPU templates (cross-thread allreduce, pooling),
# compiled by nvcc; a GPU run is in tests/gpu/test_reduction_gpu.py
CUDA_REDUCTIONS = [
    ("reduce_max", (64, 1024), {"axes": (1,)}), ("reduce_min", (64, 1024), {"axes": (1,)}),
    ("reduce_max", (4, 8, 300), {"axes": None}), ("reduce_min", (32, 7, 5), {"axes": (0, 2)}),
    ("max_pool2d", (1, 8, 16, 16), {"kernel": 3, "strides": 2, "padding": 1}),
    ("global_max_pool2d", (1, 64, 14, 14), {}),
]


@pytest.mark.skipif(__import__("shutil").which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("op,shape,attrs", CUDA_REDUCTIONS, ids=[f"{o}_{'x'.join(map(str, s))}"
                                                               for o, s, _ in CUDA_REDUCTIONS])
def test_cuda_keyed_reduction_compiles(op, shape, attrs, dtype):
    """TVM's cross-thread reduction accepts only its own reducers: the order-key max/min is one,
    so every GPU template schedules it; the NaN decode sits in the epilogue."""
    from tefuse.codegen.ptx import compile_to_ptx

    g, _ = build_op(op, np.zeros(shape, dtype), **attrs)
    cg = tefuse.build(g, "cuda")
    src = cg.source("cuda")
    assert len(cg.kernels) == 1
    # NaN is told from the bits: its magnitude bits above +inf's (nanprop.order_key)
    nan_test = re.search(r"(2139095040|\(short\)31744) < \(.*& (2147483647|\(short\)32767)\)", src)
    assert nan_test or "isnan" in src or "__hisnan" in src, src[:2000]
    assert compile_to_ptx(src, "sm_90")


def _bf16_graph(kind: str):
    b = tefuse.GraphBuilder()
    x = b.input("x", (1, 2, 4, 4), "bfloat16")
    if kind in ("maximum", "minimum"):
        return b.build(b.op(kind, x, b.input("y", (1, 2, 4, 4), "bfloat16")))
    if kind == "max_pool2d":
        return b.build(b.max_pool2d(x, kernel=2, strides=2))
    return b.build(b.op(kind, x, axes=[2, 3]))


@pytest.mark.parametrize("kind", ["maximum", "minimum", "max_pool2d", "reduce_max", "reduce_min"])
def test_bfloat16_max_and_min_propagate_nan_on_llvm(kind):
    """bfloat16 is computed in float32 on llvm: its NaN test and order keys widen it (exactly),
    where TVM refused isnan on bfloat16 and a 16-bit reinterpretation of it."""
    import ml_dtypes

    bf = ml_dtypes.bfloat16
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 2, 4, 4)).astype(bf)
    y = rng.standard_normal((1, 2, 4, 4)).astype(bf)
    x.flat[[0, 9]] = np.nan
    y.flat[[3]] = np.nan
    x.flat[5] = -np.inf
    cg = tefuse.build(_bf16_graph(kind), "llvm")
    feeds = {"x": x, "y": y} if kind in ("maximum", "minimum") else {"x": x}
    got = np.asarray(cg.run(**feeds)[0]).astype(np.float32)
    xf, yf = x.astype(np.float32), y.astype(np.float32)
    want = {"maximum": lambda: np.maximum(xf, yf), "minimum": lambda: np.minimum(xf, yf),
            "max_pool2d": lambda: xf.reshape(1, 2, 2, 2, 2, 2).max(axis=(3, 5)),
            "reduce_max": lambda: xf.max(axis=(2, 3)), "reduce_min": lambda: xf.min(axis=(2, 3))}[kind]()
    same(got, want, rtol=0)
