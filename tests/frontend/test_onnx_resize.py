"""ONNX Resize (opsets 10-19) and Upsample through import_onnx, against onnxruntime: modes,
coordinate transformations, scales/sizes/axes/policies, antialias, roi; Resize fused with the
elementwise ops and the conv after it; clean refusals naming the node."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import tefuse
from tefuse.errors import ModelImportError
from tefuse.frontend.onnx import import_onnx

ort = pytest.importorskip("onnxruntime")


def resize_model(shape, opset=19, dtype="float32", roi=None, scales=None, sizes=None, op="Resize",
                 empty_scales=False, **attrs) -> onnx.ModelProto:
    """One Resize (or Upsample) node on input x; roi, scales and sizes as initializers."""
    inits, names = [], ["x", "", "", ""]
    for k, (name, v, dt) in enumerate((("roi", roi, "float32"), ("scales", scales, "float32"),
                                       ("sizes", sizes, "int64")), start=1):
        if v is not None or (name == "scales" and empty_scales):
            inits.append(numpy_helper.from_array(np.asarray(v if v is not None else [], dt), name))
            names[k] = name
    if op == "Upsample" or opset == 10:
        names = ["x", "scales"]
    while not names[-1]:
        names.pop()
    et = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    g = helper.make_graph([helper.make_node(op, names, ["y"], name="the_resize", **attrs)], "g",
                          [helper.make_tensor_value_info("x", et, list(shape))],
                          [helper.make_tensor_value_info("y", et, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    return onnx.shape_inference.infer_shapes(m)


def versus_ort(model, feeds, atol=1e-5):
    graph = import_onnx(model)
    cg = tefuse.build(graph, "llvm")
    got = cg.run(**feeds)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=atol, atol=atol)
    return cg


def rnd(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


CASES = {
    "nearest_half_pixel_down": dict(scales=[1, 1, 0.5, 0.6], mode="nearest"),
    "nearest_prefer_ceil_asym": dict(scales=[1, 1, 2, 1.5], mode="nearest", nearest_mode="round_prefer_ceil",
                                     coordinate_transformation_mode="asymmetric"),
    "nearest_floor_align": dict(sizes=[1, 2, 9, 7], mode="nearest", nearest_mode="floor",
                                coordinate_transformation_mode="align_corners"),
    "nearest_ceil_half_pixel": dict(sizes=[1, 2, 9, 3], mode="nearest", nearest_mode="ceil"),
    "linear_half_pixel": dict(scales=[1, 1, 1.7, 0.6], mode="linear"),
    "linear_pytorch_half_pixel": dict(sizes=[1, 2, 3, 7], mode="linear",
                                      coordinate_transformation_mode="pytorch_half_pixel"),
    "linear_align_corners": dict(scales=[1, 1, 2, 2], mode="linear", coordinate_transformation_mode="align_corners"),
    "linear_half_pixel_symmetric": dict(scales=[1, 1, 1.3, 0.7], mode="linear",
                                        coordinate_transformation_mode="half_pixel_symmetric"),
    "cubic": dict(scales=[1, 1, 0.8, 1.6], mode="cubic"),
    "cubic_a_exclude": dict(scales=[1, 1, 1.6, 0.5], mode="cubic", cubic_coeff_a=-0.5, exclude_outside=1),
    "cubic_asymmetric": dict(scales=[1, 1, 2, 2], mode="cubic", coordinate_transformation_mode="asymmetric"),
    "crop_extrapolate": dict(sizes=[1, 2, 5, 4], roi=[0, 0, 0.2, -0.3, 1, 1, 0.9, 1.2], mode="linear",
                             coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=10.0),
    "axes_not_larger": dict(sizes=[5, 5], axes=[3, 2], mode="linear", keep_aspect_ratio_policy="not_larger"),
    "axes_not_smaller": dict(sizes=[3, 9], axes=[2, 3], mode="nearest", keep_aspect_ratio_policy="not_smaller"),
    "antialias_linear": dict(scales=[1, 1, 0.5, 0.6], mode="linear", antialias=1),
    "antialias_cubic": dict(sizes=[1, 2, 3, 4], mode="cubic", antialias=1),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_resize_19(rng, case):
    attrs = dict(CASES[case])
    if "axes" in attrs or "antialias" in attrs:
        versus_ort(resize_model((1, 2, 6, 7), opset=18, **attrs), {"x": rnd(rng, 1, 2, 6, 7)})
    else:
        versus_ort(resize_model((1, 2, 6, 7), **attrs), {"x": rnd(rng, 1, 2, 6, 7)})


def test_resize_11_with_an_empty_scales_and_tf_half_pixel_for_nn(rng):
    x = rnd(rng, 1, 1, 5, 6)
    versus_ort(resize_model(x.shape, opset=11, empty_scales=True, sizes=[1, 1, 8, 4], mode="nearest",
                            roi=[], coordinate_transformation_mode="tf_half_pixel_for_nn"), {"x": x})


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_resize_10_and_upsample(rng, mode):
    """Resize-10 (asymmetric; nearest floors a growing axis and ceils a shrinking one, as
    onnxruntime) and Upsample-9."""
    x = rnd(rng, 1, 2, 7, 5)
    versus_ort(resize_model(x.shape, opset=10, scales=[1, 1, 1.7, 0.6], mode=mode), {"x": x})
    versus_ort(resize_model(x.shape, opset=9, op="Upsample", scales=[1, 1, 2, 1.5], mode=mode), {"x": x})


def test_uint8_image(rng):
    x = rng.integers(0, 256, (1, 3, 6, 6)).astype(np.uint8)
    versus_ort(resize_model(x.shape, dtype="uint8", scales=[1, 1, 2, 2], mode="nearest"), {"x": x}, atol=0)
    got = tefuse.build(import_onnx(resize_model(x.shape, dtype="uint8", scales=[1, 1, 1.5, 0.5], mode="linear")),
                       "llvm").run(x)[0]
    want = ort.InferenceSession(resize_model(x.shape, dtype="uint8", scales=[1, 1, 1.5, 0.5],
                                             mode="linear").SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert got.dtype == np.uint8 and np.abs(got.astype(int) - want.astype(int)).max() <= 1  # rounding of .5


def upsample_add_conv(rng, c=4):
    """Resize (linear, x2) -> Add -> Conv -> Relu: an FPN neck's top-down merge."""
    nodes = [helper.make_node("Resize", ["x", "", "scales"], ["up"], mode="linear"),
             helper.make_node("Add", ["up", "skip"], ["merged"]),
             helper.make_node("Conv", ["merged", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"])]
    g = helper.make_graph(nodes, "neck", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, 5, 6]),
                                          helper.make_tensor_value_info("skip", TensorProto.FLOAT, [1, c, 10, 12])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"),
                           numpy_helper.from_array(rnd(rng, 8, c, 3, 3), "w")])
    return onnx.shape_inference.infer_shapes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]))


def test_resize_add_relu_is_one_kernel(rng):
    nodes = [helper.make_node("Resize", ["x", "", "scales"], ["up"], mode="cubic"),
             helper.make_node("Add", ["up", "skip"], ["s"]), helper.make_node("Relu", ["s"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 5]),
                                       helper.make_tensor_value_info("skip", TensorProto.FLOAT, [1, 3, 8, 10])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")])
    m = onnx.shape_inference.infer_shapes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]))
    cg = versus_ort(m, {"x": rnd(rng, 1, 3, 4, 5), "skip": rnd(rng, 1, 3, 8, 10)})
    assert cg.num_kernels == 1


def test_resize_add_conv_is_one_kernel(rng):
    """The resize and the add are computed inside the conv's input read: no upsampled tensor is
    ever written."""
    cg = versus_ort(upsample_add_conv(rng), {"x": rnd(rng, 1, 4, 5, 6), "skip": rnd(rng, 1, 4, 10, 12)}, atol=1e-4)
    assert cg.num_kernels == 1
    (k,) = cg.kernels
    assert k.group.anchor_kind == "conv2d" and [n.op for n in k.group.prologue] == ["resize", "add"]


def test_resize_add_conv_builds_for_cuda(rng):
    """Compiled for CUDA (no GPU needed to compile): still one kernel, the conv reading through the
    resize's index arithmetic."""
    cg = tefuse.build(import_onnx(upsample_add_conv(rng)), "cuda")
    assert cg.num_kernels == 1
    src = cg.kernels[0].source("cuda")
    assert "floor(" in src and "__global__" in src


def test_run_time_scales_are_refused_by_name(rng):
    g = helper.make_graph([helper.make_node("Resize", ["x", "", "s"], ["y"], name="dyn_resize", mode="linear")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4]),
                           helper.make_tensor_value_info("s", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = onnx.shape_inference.infer_shapes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]))
    with pytest.raises(ModelImportError, match=r"dyn_resize.*scales 's' must be a constant") as ei:
        import_onnx(m)
    assert ei.value.constant_inputs == ["s"]
    y = tefuse.build(import_onnx(m, constant_inputs={"s": np.array([1, 1, 2, 2], np.float32)}), "llvm").run(
        np.ones((1, 1, 4, 4), np.float32))[0]
    np.testing.assert_array_equal(y, np.ones((1, 1, 8, 8), np.float32))


def test_a_run_time_roi_is_ignored_outside_tf_crop_and_resize(rng):
    """Exporters wire roi to anything; only tf_crop_and_resize reads it, so only it needs it known."""
    g = helper.make_graph([helper.make_node("Resize", ["x", "roi", "scales"], ["y"], mode="linear")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4]),
                           helper.make_tensor_value_info("roi", TensorProto.FLOAT, [8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")])
    m = onnx.shape_inference.infer_shapes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]))
    graph = import_onnx(m)
    assert graph.outputs[0].shape == (1, 1, 8, 8)
    assert all(i.name != "roi" for n in graph.nodes for i in n.inputs)


REFUSED = [
    (dict(scales=[1, 1, 0.5, 0.5], mode="area"), "mode='area'"),
    (dict(scales=[1, 1, 0.5, 0.5], mode="nearest", antialias=1), "antialias=1 applies to the linear and cubic"),
    (dict(scales=[1, 1, 2, 2], mode="nearest", nearest_mode="nearest"), "nearest_mode='nearest'"),
    (dict(scales=[1, 1, 2, 2], mode="linear", coordinate_transformation_mode="tf_crop_and_resize"),
     "tf_crop_and_resize' needs the roi input"),
    (dict(scales=[1, 1, 2, 2], sizes=[1, 1, 8, 8]), "give exactly one of scales and sizes"),
    (dict(scales=[1, 1, 0.01, 0.01], mode="cubic", antialias=1), r"reads \d+ input elements per output"),
    (dict(scales=[1, 1, 2, 2], coordinate_transformation_mode="tf_half_pixel_for_nn"),
     "'tf_half_pixel_for_nn' is not one of opset 19's"),
]


@pytest.mark.parametrize("attrs,msg", REFUSED, ids=[m.split()[0].strip("'=") for _, m in REFUSED])
def test_refusals_name_the_node(attrs, msg):
    m = resize_model((1, 1, 4, 4), opset=18 if "antialias" in attrs else 19, **attrs)
    with pytest.raises(ModelImportError, match=f"'the_resize' \\(Resize, opset 1[89]\\): .*{msg}"):
        import_onnx(m, check=False)  # (the checker refuses scales with sizes itself)


def test_upsample_refuses_shrinking():
    with pytest.raises(ModelImportError, match=r"'the_resize' \(Upsample, opset 9\): scales .*Upsample only enlarges"):
        import_onnx(resize_model((1, 1, 4, 4), opset=9, op="Upsample", scales=[1, 1, 0.5, 2]))
