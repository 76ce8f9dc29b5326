"""ONNX import of the math, reduction, normalisation, Einsum and ConvTranspose ops: one-node
models built with onnx.helper, tefuse (llvm) vs onnxruntime."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T, helper, numpy_helper

import tefuse
from tests.frontend.ort_check import matches_onnxruntime
from tefuse.errors import ModelImportError
from tefuse.frontend.onnx import import_onnx

ort = pytest.importorskip("onnxruntime")

ELEM = {"float32": T.FLOAT, "float16": T.FLOAT16, "float64": T.DOUBLE, "int8": T.INT8, "int32": T.INT32,
        "int64": T.INT64, "uint8": T.UINT8, "uint32": T.UINT32, "bool": T.BOOL}


def model(nodes, feeds: dict, opset: int, inits: dict | None = None, out: tuple | None = None) -> onnx.ModelProto:
    """A model of one node (or a list, the last one's outputs the model's): `feeds` are its inputs
    (their shapes and dtypes), `inits` initializers; `out` the (dtype, shape) of an output that
    onnx's shape inference does not fill (a function op's)."""
    nodes = nodes if isinstance(nodes, list) else [nodes]
    outs = [helper.make_tensor_value_info(o, ELEM[out[0]], list(out[1])) if out else
            helper.make_tensor_value_info(o, T.UNDEFINED, None) for o in nodes[-1].output]
    g = helper.make_graph(
        nodes, "m", [helper.make_tensor_value_info(k, ELEM[str(v.dtype)], list(v.shape)) for k, v in feeds.items()],
        outs, [numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)
    return onnx.shape_inference.infer_shapes(m, strict_mode=True)


def check(m: onnx.ModelProto, feeds: dict, rtol=1e-5, atol=1e-6, exact=False, **import_args):
    """Import, build for llvm, run; every output equals onnxruntime's (dtype, shape, values)."""
    return matches_onnxruntime(m, feeds, rtol, atol, exact, **import_args)[1]


def refused(m: onnx.ModelProto, match: str) -> None:
    with pytest.raises(ModelImportError, match=match):
        import_onnx(m)


# -- elementwise ----------------------------------------------------------------------------
UNARY = {"Sin": (-10, 10), "Cos": (-10, 10), "Tan": (-1.4, 1.4), "Asin": (-1, 1), "Acos": (-1, 1),
         "Atan": (-20, 20), "Sinh": (-5, 5), "Cosh": (-5, 5), "Asinh": (-20, 20), "Acosh": (1, 20),
         "Atanh": (-0.99, 0.99), "Sign": (-3, 3), "Round": (-4, 4), "Mish": (-6, 6), "Softsign": (-6, 6)}


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary(op, rng):
    x = rng.uniform(*UNARY[op], (3, 17)).astype(np.float32)
    if op == "Round":
        x[0, :6] = [0.5, 1.5, 2.5, -0.5, -2.5, 3.5]  # half to even
    if op == "Sign":
        x[0, :2] = 0.0
    check(model(helper.make_node(op, ["x"], ["y"]), {"x": x}, 18), {"x": x})


@pytest.mark.parametrize("op,attrs", [("ThresholdedRelu", {}), ("ThresholdedRelu", {"alpha": 0.3}),
                                      ("Celu", {}), ("Celu", {"alpha": 0.5}), ("Shrink", {}),
                                      ("Shrink", {"bias": 0.7, "lambd": 1.2})])
def test_activation_with_attributes(op, attrs, rng):
    x = rng.uniform(-3, 3, (4, 9)).astype(np.float32)
    check(model(helper.make_node(op, ["x"], ["y"], **attrs), {"x": x}, 18), {"x": x})


@pytest.mark.parametrize("attrs", [{}, {"detect_positive": 0}, {"detect_negative": 0}])
def test_isinf_isnan(attrs):
    x = np.array([[1.0, np.inf, -np.inf, np.nan, 0.0, -2.0]], np.float32)
    check(model(helper.make_node("IsInf", ["x"], ["y"], **attrs), {"x": x}, 20), {"x": x}, exact=True)
    check(model(helper.make_node("IsNaN", ["x"], ["y"]), {"x": x}, 20), {"x": x}, exact=True)


@pytest.mark.parametrize("dtype,fmod", [("int32", 0), ("int64", 0), ("int8", 1), ("uint8", 0),
                                        ("float32", 1), ("float64", 1), ("float16", 1)])
def test_mod(dtype, fmod, rng):
    a = (rng.uniform(-50, 50, (3, 8)) if dtype.startswith(("int", "float")) else rng.uniform(0, 200, (3, 8)))
    b = rng.uniform(1, 9, (8,)) * rng.choice([-1, 1], (8,)) if dtype[0] != "u" else rng.uniform(1, 9, (8,))
    a, b = a.astype(dtype), b.astype(dtype)
    if dtype.startswith("float"):
        b[b == 0] = 1
    else:
        b[b == 0] = 3
    check(model(helper.make_node("Mod", ["a", "b"], ["y"], fmod=fmod), {"a": a, "b": b}, 13), {"a": a, "b": b},
          exact=True)


def test_float_mod_with_fmod_0_is_numpys():
    """onnxruntime refuses a float Mod with fmod=0 (the spec asks for 1); onnx.reference computes
    numpy.mod, and so does tefuse."""
    a = np.array([-4.3, 7.2, 5.0, -0.0, 1.0], np.float32)
    b = np.array([2.1, -3.4, 8.0, 2.0, -np.inf], np.float32)
    g = import_onnx(model(helper.make_node("Mod", ["a", "b"], ["y"], fmod=0), {"a": a, "b": b}, 13))
    np.testing.assert_array_equal(tefuse.build(g, "llvm").run(a, b)[0], np.mod(a, b))


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
@pytest.mark.parametrize("dtype", ["uint8", "uint32"])
def test_bitshift(dtype, direction):
    a = np.array([1, 3, 200, 17, 255], dtype)
    b = np.array([1, 0, 2, 4, 7], dtype)
    check(model(helper.make_node("BitShift", ["a", "b"], ["y"], direction=direction), {"a": a, "b": b}, 11),
          {"a": a, "b": b}, exact=True)


def test_bitshift_without_a_direction_is_refused_naming_the_node():
    a = np.zeros(3, np.uint8)
    refused(model(helper.make_node("BitShift", ["a", "b"], ["y"], direction="UP"), {"a": a, "b": a}, 11),
            "BitShift.*direction='UP'")


# -- reductions -----------------------------------------------------------------------------
REDUCE = ["ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceProd", "ReduceSumSquare"]


@pytest.mark.parametrize("op", REDUCE)
@pytest.mark.parametrize("axes,keepdims,opset", [(None, 1, 13), ([1], 0, 18), ([0, 2], 1, 13), ([-1], 0, 13),
                                                 ([2, 0], 1, 18), (None, 0, 18)])
def test_reduce(op, axes, keepdims, opset, rng):
    x = rng.uniform(0.5, 1.5, (3, 4, 5)).astype(np.float32)
    if op != "ReduceLogSum":
        x *= rng.choice([-1, 1], x.shape).astype(np.float32)
    inits = {}
    if axes is not None and opset >= 18:
        node = helper.make_node(op, ["x", "axes"], ["y"], keepdims=keepdims)
        inits = {"axes": np.array(axes, np.int64)}
    else:
        node = helper.make_node(op, ["x"], ["y"], keepdims=keepdims, **({"axes": axes} if axes else {}))
    check(model(node, {"x": x}, opset, inits), {"x": x}, rtol=1e-5, atol=1e-5)


def test_reduce_log_sum_exp_is_stable():
    """exp(100) overflows float32: the max is taken out first, and an all -inf row stays -inf."""
    x = np.array([[100.0, 99.0, -3.0], [-np.inf, -np.inf, -np.inf], [88.0, -np.inf, 1.0]], np.float32)
    node = helper.make_node("ReduceLogSumExp", ["x"], ["y"], axes=[1], keepdims=0)
    y = tefuse.build(import_onnx(model(node, {"x": x}, 13)), "llvm").run(x)[0]
    want = np.logaddexp.reduce(x.astype(np.float64), axis=1)
    np.testing.assert_allclose(y, want, rtol=1e-6)


def test_reduce_log_sum_exp_float16_computes_in_float32(rng):
    x = (rng.standard_normal((4, 300)) * 4).astype(np.float16)
    node = helper.make_node("ReduceLogSumExp", ["x"], ["y"], axes=[1], keepdims=1)
    y = tefuse.build(import_onnx(model(node, {"x": x}, 13)), "llvm").run(x)[0]
    assert y.dtype == np.float16
    np.testing.assert_allclose(y, np.logaddexp.reduce(x.astype(np.float64), axis=1, keepdims=True), rtol=1e-3)


@pytest.mark.parametrize("op", REDUCE)
def test_reduce_over_no_axes_keeps_the_elementwise_part(op, rng):
    """noop_with_empty_axes=1 without axes: "ReduceSumSquare acts as a vanilla Square"."""
    x = rng.uniform(0.5, 2.0, (2, 3)).astype(np.float32)
    if op != "ReduceLogSum":
        x[0] *= -1
    node = helper.make_node(op, ["x"], ["y"], noop_with_empty_axes=1)
    check(model(node, {"x": x}, 18), {"x": x}, rtol=1e-6)


@pytest.mark.parametrize("op", ["ReduceProd", "ReduceSumSquare", "ReduceL1"])
def test_reduce_integers(op, rng):
    x = rng.integers(-3, 4, (3, 4)).astype(np.int32)
    check(model(helper.make_node(op, ["x"], ["y"], axes=[1]), {"x": x}, 13), {"x": x}, exact=True)


# -- normalisation --------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(2, 3, 5, 4), (1, 4, 7), (2, 2, 3, 1, 2)])
def test_instance_norm(shape, rng):
    x = (rng.standard_normal(shape) * 2 + 1).astype(np.float32)
    c = shape[1]
    inits = {"s": rng.standard_normal(c).astype(np.float32), "b": rng.standard_normal(c).astype(np.float32)}
    nodes = [helper.make_node("InstanceNormalization", ["x", "s", "b"], ["n"], epsilon=1e-3),
             helper.make_node("Relu", ["n"], ["y"])]
    cg = check(model(nodes, {"x": x}, 13, inits), {"x": x}, rtol=1e-4, atol=1e-5)
    assert cg.num_kernels == 2, "the reshape back to x's shape is computed in the relu's kernel"


@pytest.mark.parametrize("opset,groups", [(18, 2), (18, 4), (21, 2), (21, 1)])
def test_group_norm(opset, groups, rng):
    """Opset 18's scale and bias are per group, opset 21's per channel. (onnx's checker calls
    opset 18's GroupNormalization deprecated, so such a model imports with check=False.)"""
    x = (rng.standard_normal((2, 4, 3, 5)) * 3).astype(np.float32)
    k = groups if opset == 18 else 4
    feeds = {"x": x, "s": rng.standard_normal(k).astype(np.float32), "b": rng.standard_normal(k).astype(np.float32)}
    node = helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=groups, epsilon=1e-4)
    check(model(node, feeds, opset, out=("float32", x.shape)), feeds, rtol=1e-4, atol=1e-5, check=opset >= 21)


def test_group_norm_refuses_groups_that_do_not_divide_the_channels():
    x, s = np.zeros((1, 6, 2, 2), np.float32), np.zeros(6, np.float32)
    m = model(helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=4), {"x": x, "s": s, "b": s}, 21,
              out=("float32", x.shape))
    refused(m, "GroupNormalization.*groups=4 must be a positive integer dividing the 6 channels")


# -- Einsum ---------------------------------------------------------------------------------
EINSUM = [
    ("bij,bjk->bik", [(5, 2, 3), (5, 3, 4)]), ("bhid,bhjd->bhij", [(2, 3, 4, 8), (2, 3, 5, 8)]),
    ("bhij,bhjd->bhid", [(2, 3, 4, 5), (2, 3, 5, 8)]), ("ij->ji", [(3, 4)]), ("ij->i", [(3, 4)]),
    ("ii->i", [(4, 4)]), ("ii", [(4, 4)]), ("...ii->...i", [(3, 5, 5)]), ("i,i", [(5,), (5,)]),
    ("ij,jk", [(3, 4), (4, 5)]), ("...ij,...jk->...ik", [(2, 1, 3, 4), (1, 5, 4, 2)]), ("i,j->ij", [(3,), (4,)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]), ("nchw,kc->nkhw", [(2, 3, 4, 5), (6, 3)]),
    ("ij,ij->ij", [(3, 4), (3, 4)]), ("abc,cd->", [(2, 3, 4), (4, 5)]), ("iij,jk->ik", [(3, 3, 4), (4, 2)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM, ids=[e for e, _ in EINSUM])
def test_einsum(eq, shapes, rng):
    feeds = {f"x{k}": rng.standard_normal(s).astype(np.float32) for k, s in enumerate(shapes)}
    check(model(helper.make_node("Einsum", list(feeds), ["y"], equation=eq), feeds, 12), feeds, rtol=1e-5, atol=1e-5)


def test_einsum_attention_scores_are_one_gemm_kernel(rng):
    """bhid,bhjd->bhij: a batched GEMM reading the keys transposed, no kernel of its own for them."""
    feeds = {"q": rng.standard_normal((2, 4, 16, 8)).astype(np.float32),
             "k": rng.standard_normal((2, 4, 16, 8)).astype(np.float32)}
    cg = check(model(helper.make_node("Einsum", ["q", "k"], ["y"], equation="bhid,bhjd->bhij"), feeds, 12), feeds,
               rtol=1e-5, atol=1e-5)
    assert cg.num_kernels == 1


@pytest.mark.parametrize("eq,shapes,match", [
    ("ij,jk->ik", [(3, 4), (5, 6)], "label 'j' has sizes 4 and 5"),
    ("ij->k", [(3, 4)], "output labels must be distinct labels of the operands"),
    ("ijk->ij", [(3, 4)], "term 'ijk' does not fit an operand of shape"),
])
def test_einsum_refusals_name_the_equation(eq, shapes, match):
    feeds = {f"x{k}": np.zeros(s, np.float32) for k, s in enumerate(shapes)}
    node = helper.make_node("Einsum", list(feeds), ["y"], equation=eq)
    g = helper.make_graph([node], "m", [helper.make_tensor_value_info(k, T.FLOAT, list(v.shape))
                                        for k, v in feeds.items()], [helper.make_tensor_value_info("y", T.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 12)], ir_version=10)
    with pytest.raises(ModelImportError, match=rf"Einsum.*equation {eq!r}.*{match}"):
        import_onnx(m, check=False)


# -- ConvTranspose --------------------------------------------------------------------------
CONV_T = {
    "stride2_pad1": dict(strides=[2, 2], pads=[1, 1, 1, 1]),
    "stride3x2_asym_pads": dict(strides=[3, 2], pads=[0, 1, 2, 0]),
    "dilated": dict(dilations=[2, 2], pads=[1, 0, 1, 2]),
    "group2_stride2": dict(group=2, strides=[2, 2]),
    "depthwise": dict(group=4, strides=[2, 1], pads=[1, 1, 1, 1]),
    "output_padding": dict(strides=[2, 3], output_padding=[1, 2]),
    "same_upper": dict(strides=[2, 2], auto_pad="SAME_UPPER"),
    "same_lower": dict(strides=[2, 2], auto_pad="SAME_LOWER"),
    "valid": dict(strides=[2, 1], auto_pad="VALID"),
    "output_shape": dict(strides=[3, 2], output_shape=[14, 8]),
    "output_shape_same_upper": dict(strides=[3, 2], output_shape=[13, 8], auto_pad="SAME_UPPER"),
    "pads_crop_past_the_kernel": dict(strides=[2, 2], pads=[3, 2, 3, 4]),
    "dilated_stride_group": dict(strides=[2, 2], dilations=[2, 1], group=2, pads=[2, 1, 0, 1], output_padding=[1, 0]),
}


@pytest.mark.parametrize("case", sorted(CONV_T))
@pytest.mark.parametrize("weight", ["constant", "input"])
def test_conv_transpose(case, weight, rng):
    attrs = CONV_T[case]
    g = attrs.get("group", 1)
    x = rng.standard_normal((2, 4, 5, 4)).astype(np.float32)
    w = rng.standard_normal((4, 6 // g if g != 4 else 1, 3, 3)).astype(np.float32)
    b = rng.standard_normal(w.shape[1] * g).astype(np.float32)
    feeds, inits = {"x": x}, {"b": b}
    (feeds if weight == "input" else inits)["w"] = w
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], kernel_shape=[3, 3], **attrs)
    cg = check(model(node, feeds, 11, inits), feeds, rtol=1e-4, atol=1e-5)
    if weight == "constant":
        assert cg.num_kernels == 1, "zeros inserted in the conv's input read, bias in its epilogue"


@pytest.mark.parametrize("attrs", [dict(strides=[2], pads=[1, 0]), dict(strides=[3], group=2, output_padding=[1]),
                                   dict(dilations=[2], auto_pad="SAME_UPPER", strides=[2])])
def test_conv_transpose_1d(attrs, rng):
    x = rng.standard_normal((2, 4, 7)).astype(np.float32)
    w = rng.standard_normal((4, 3, 4)).astype(np.float32)
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], **attrs)
    check(model(node, {"x": x}, 11, {"w": w}), {"x": x}, rtol=1e-4, atol=1e-5)


def test_conv_transpose_3d_is_refused_naming_the_node():
    x, w = np.zeros((1, 2, 3, 3, 3), np.float32), np.zeros((2, 2, 2, 2, 2), np.float32)
    refused(model(helper.make_node("ConvTranspose", ["x", "w"], ["y"], kernel_shape=[2, 2, 2]), {"x": x}, 11,
                  {"w": w}), r"ConvTranspose.*kernel_shape \[2, 2, 2\]: only 1-D and 2-D")


@pytest.mark.parametrize("op,identity", [("ReduceProd", 1.0), ("ReduceL2", 0.0), ("ReduceLogSumExp", -np.inf)])
def test_a_reduction_of_an_empty_input_is_its_identity_known_at_import(op, identity):
    """A zero-length input has one possible value: reduced over its empty axis, the result is a
    constant, and the input no input of the graph."""
    node = helper.make_node(op, ["x"], ["y"], axes=[1], keepdims=1)
    g = helper.make_graph([node], "m", [helper.make_tensor_value_info("x", T.FLOAT, [2, 0, 3])],
                          [helper.make_tensor_value_info("y", T.FLOAT, [2, 1, 3])])
    graph = import_onnx(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=10))
    assert graph.inputs == []
    (y,) = tefuse.build(graph, "llvm").run()
    np.testing.assert_array_equal(y, np.full((2, 1, 3), identity, np.float32))
