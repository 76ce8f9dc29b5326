"""resize against onnx.reference's Resize (the semantics it follows): every mode, nearest_mode,
coordinate transformation, sizes/scales/axes/keep_aspect_ratio_policy, antialias, exclude_outside,
tf_crop_and_resize's roi and extrapolation, integer and half types; clamped reads at the borders;
refusals naming the op. Several configurations share one build (one kernel each)."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import tefuse
from tests.reference import run_op

COORDS = ["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric"]


def reference(x: np.ndarray, scales=None, sizes=None, roi=None, roi_dtype="float32", axes=None, **attrs):
    """onnx.reference's Resize-19 of x."""
    inits, names = [], ["x", "", "", ""]
    for k, (name, v, dt) in enumerate((("roi", roi, roi_dtype), ("scales", scales, "float32"),
                                       ("sizes", sizes, "int64")), start=1):
        if v is not None:
            inits.append(numpy_helper.from_array(np.asarray(v, dt), name))
            names[k] = name
    while not names[-1]:
        names.pop()
    node = helper.make_node("Resize", names, ["y"], **({"axes": list(axes)} if axes is not None else {}), **attrs)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", helper.np_dtype_to_tensor_dtype(x.dtype),
                                                                      x.shape)],
                          [helper.make_empty_tensor_value_info("y")], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
    return ReferenceEvaluator(m).run(None, {"x": x})[0]


def op_attrs(scales=None, sizes=None, roi=None, roi_dtype="float32", axes=None, **attrs) -> dict:
    """The same configuration as resize's attributes (scales and roi as the float32 ONNX holds)."""
    out = {k: (bool(v) if k in ("exclude_outside", "antialias") else v) for k, v in attrs.items()}
    if scales is not None:
        out["scales"] = tuple(float(np.float32(s)) for s in scales)
    if sizes is not None:
        out["sizes"] = tuple(int(s) for s in sizes)
    if roi is not None:
        out["roi"] = tuple(float(np.asarray(r, roi_dtype)) for r in roi)
        out["roi_dtype"] = roi_dtype
    if axes is not None:
        out["axes"] = tuple(axes)
    return out


def check_all(x: np.ndarray, configs: list[dict], atol=1e-5):
    """Each configuration a resize of x in one graph; each output equal to the reference's."""
    b = tefuse.GraphBuilder()
    xi = b.input("x", x.shape, str(x.dtype))
    outs = [b.resize(xi, **op_attrs(**c)) for c in configs]
    got = tefuse.build(b.build(outs), "llvm").run(x)
    for c, y in zip(configs, got):
        want = reference(x, **c)
        assert y.shape == want.shape and y.dtype == want.dtype, (c, y.shape, want.shape, y.dtype)
        if np.issubdtype(want.dtype, np.integer) or want.dtype == bool:
            np.testing.assert_array_equal(y, want, err_msg=str(c))
        else:
            np.testing.assert_allclose(y.astype(np.float64), want.astype(np.float64), rtol=atol, atol=atol,
                                       err_msg=str(c))


@pytest.mark.parametrize("nearest_mode", ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])
def test_nearest_every_coordinate_mode(rng, nearest_mode):
    """Halving an axis puts half_pixel's coordinates on .5 ties, doubling one puts asymmetric's
    there: each rounding mode must break them as the reference does."""
    x = rng.standard_normal((1, 2, 6, 5)).astype("float32")
    check_all(x, [dict(scales=(1, 1, 0.5, 2.0), mode="nearest", nearest_mode=nearest_mode,
                       coordinate_transformation_mode=c) for c in COORDS]
              + [dict(sizes=(1, 2, 4, 9), mode="nearest", nearest_mode=nearest_mode,
                      coordinate_transformation_mode="align_corners")])


@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_interpolation_every_coordinate_mode(rng, mode):
    x = rng.standard_normal((1, 2, 6, 5)).astype("float32")
    check_all(x, [dict(scales=(1, 1, 0.6, 1.7), mode=mode, coordinate_transformation_mode=c) for c in COORDS]
              + [dict(sizes=(1, 2, 1, 1), mode=mode, coordinate_transformation_mode="pytorch_half_pixel"),
                 dict(scales=(1, 1, 1.5, 0.7), mode=mode, cubic_coeff_a=-0.5, exclude_outside=1),
                 dict(scales=(2.0, 0.5), axes=(1, 3), mode=mode)])


@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_antialias_widens_the_window_when_downscaling(rng, mode):
    """antialias stretches the filter by 1/scale below 1 (4 taps a side for linear at 0.5, 8 for
    cubic) and leaves upscaling as it was."""
    x = rng.standard_normal((1, 1, 9, 8)).astype("float32")
    configs = [dict(scales=(1, 1, 0.5, 0.6), mode=mode, antialias=1),
               dict(scales=(1, 1, 0.3, 1.0), mode=mode, antialias=1, coordinate_transformation_mode="align_corners"),
               dict(scales=(1, 1, 1.0, 0.5), mode=mode, antialias=1, exclude_outside=1),
               dict(scales=(1, 1, 1.6, 2.0), mode=mode, antialias=1)]
    check_all(x, configs)
    plain = run_op("resize", x, **op_attrs(scales=(1, 1, 0.5, 0.5), mode=mode))
    smooth = run_op("resize", x, **op_attrs(scales=(1, 1, 0.5, 0.5), mode=mode, antialias=1))
    assert np.abs(plain - smooth).max() > 1e-2  # the filter did widen


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_tf_crop_and_resize(rng, mode):
    x = rng.standard_normal((1, 2, 6, 5)).astype("float32")
    crop = dict(mode=mode, coordinate_transformation_mode="tf_crop_and_resize")
    check_all(x, [dict(sizes=(3, 4), axes=(2, 3), roi=(0.4, 0.6, 0.6, 0.8), **crop),
                  dict(sizes=(7, 8), axes=(3, 2), roi=(-0.2, 0.1, 1.3, 1.1), extrapolation_value=-3.0, **crop),
                  dict(sizes=(1, 2, 1, 1), roi=(0, 0, 0.2, 0.1, 1, 1, 0.9, 0.8), **crop),
                  dict(scales=(1, 1, 2, 2), roi=(0, 0, -2, -2, 1, 1, 3, 3), extrapolation_value=7.0, **crop)])


def test_roi_arithmetic_in_the_roi_type():
    """The reference does the roi's own arithmetic in the roi's type: a start of 0.1f times 5 is 0.5
    in float32, just above it in float64, which moves a nearest tie at the first output."""
    x = np.arange(6 * 5, dtype="float32").reshape(1, 1, 6, 5)
    cfg = dict(sizes=(8,), axes=(2,), roi=(np.float32(0.1), np.float32(1.1)), mode="nearest",
               coordinate_transformation_mode="tf_crop_and_resize")
    f32 = run_op("resize", x, **op_attrs(**cfg))
    f64 = run_op("resize", x, **op_attrs(roi_dtype="float64", **cfg))
    np.testing.assert_array_equal(f32, reference(x, **cfg))
    np.testing.assert_array_equal(f64, reference(x, roi_dtype="float64", **cfg))
    assert not np.array_equal(f32, f64)


@pytest.mark.parametrize("policy", ["stretch", "not_larger", "not_smaller"])
def test_sizes_keep_aspect_ratio_policy(rng, policy):
    x = rng.standard_normal((1, 2, 6, 4)).astype("float32")
    check_all(x, [dict(sizes=(7, 9), axes=(2, 3), mode="linear", keep_aspect_ratio_policy=policy),
                  dict(sizes=(3, 3), axes=(3, 2), mode="nearest", keep_aspect_ratio_policy=policy),
                  dict(sizes=(1, 2, 4, 4), mode="cubic", keep_aspect_ratio_policy=policy)])


@pytest.mark.parametrize("dtype", ["uint8", "int32", "int8", "float16", "float64"])
def test_types(rng, dtype):
    """Integer results are rounded half to even and saturated (a cubic overshoot of a 0/255 edge
    stays in uint8); half and double keep their type."""
    if dtype == "uint8":
        x = np.where(rng.random((1, 1, 6, 7)) > 0.5, 255, 0).astype(dtype)
    elif dtype.startswith("int"):
        x = rng.integers(-100, 100, (1, 1, 6, 7)).astype(dtype)
    else:
        x = rng.standard_normal((1, 1, 6, 7)).astype(dtype)
    check_all(x, [dict(scales=(1, 1, 1.6, 0.7), mode=m) for m in ("nearest", "linear", "cubic")]
              + [dict(scales=(1, 1, 0.5, 0.5), mode="linear", antialias=1)], atol=1e-2 if dtype == "float16" else 1e-5)


def test_nearest_of_bools(rng):
    """nearest only moves elements, so it takes any type (the reference's float round trip does not
    take bools: compare with its uint8 result)."""
    x = rng.random((2, 3, 4)) > 0.5
    y = run_op("resize", x, scales=(1.0, 2.0, 0.5), mode="nearest")
    assert y.dtype == bool
    np.testing.assert_array_equal(y, reference(x.astype("uint8"), scales=(1, 2, 0.5), mode="nearest").astype(bool))


def test_simple_nearest_floors_up_and_ceils_down():
    """nearest_mode 'simple' (Resize-10, Upsample): asymmetric coordinates floored on a growing
    axis, ceiled on a shrinking one, the last index clamped."""
    x = np.arange(7 * 5, dtype="float32").reshape(7, 5)
    y = run_op("resize", x, scales=(1.5, 0.6), mode="nearest", coordinate_transformation_mode="asymmetric",
               nearest_mode="simple")
    rows = np.minimum(np.floor(np.arange(10) / 1.5).astype(int), 6)
    cols = np.minimum(np.ceil(np.arange(3) / np.float64(np.float32(0.6))).astype(int), 4)
    np.testing.assert_array_equal(y, x[rows][:, cols])


def test_border_windows_read_inside_the_input(rng):
    """Windows hanging off both ends (cubic's four taps at the first and last outputs, a ceil pick
    past the end, a roi far outside, one too far for an int32) read clamped indices, as the
    reference's edge padding."""
    x = rng.standard_normal((1, 1, 3, 3)).astype("float32")
    check_all(x, [dict(scales=(1, 1, 3.0, 0.34), mode="cubic", coordinate_transformation_mode="asymmetric"),
                  dict(scales=(1, 1, 0.4, 0.4), mode="nearest", nearest_mode="ceil",
                       coordinate_transformation_mode="asymmetric"),
                  dict(sizes=(1, 1, 4, 4), mode="linear", coordinate_transformation_mode="tf_crop_and_resize",
                       roi=(0, 0, -5, -5, 1, 1, 5, 5), extrapolation_value=0.0),
                  dict(sizes=(1, 1, 4, 4), mode="cubic", coordinate_transformation_mode="tf_crop_and_resize",
                       roi=(0, 0, -1e12, 0.2, 1, 1, 1e12, 3e9), extrapolation_value=5.0)])


def test_identity_axes_pass_through(rng):
    x = rng.standard_normal((2, 3, 4)).astype("float32")
    np.testing.assert_array_equal(run_op("resize", x, scales=(1.0, 1.0, 1.0), mode="cubic"), x)


BAD = [
    (dict(scales=(1.0, 2.0), sizes=(2, 4)), "exactly one of scales and sizes"),
    (dict(), "exactly one of scales and sizes"),
    (dict(scales=(2.0,)), r"one value per resized axis \(2\)"),
    (dict(scales=(1.0, -2.0)), "positive and finite"),
    (dict(sizes=(2, 4), axes=(1, -1)), "repeat an axis"),
    (dict(scales=(2.0,), axes=(2,)), "axis 2 out of range"),
    (dict(scales=(1.0, 2.0), mode="bilinear"), "mode must be one of nearest, linear, cubic"),
    (dict(scales=(1.0, 2.0), nearest_mode="up"), "nearest_mode must be one of"),
    (dict(scales=(1.0, 2.0), coordinate_transformation_mode="tf"), "coordinate_transformation_mode must be one of"),
    (dict(scales=(1.0, 2.0), antialias=True), "antialias applies to the linear and cubic modes"),
    (dict(scales=(1.0, 2.0), coordinate_transformation_mode="tf_crop_and_resize"), "needs a roi"),
    (dict(scales=(1.0, 2.0), mode="linear", coordinate_transformation_mode="tf_crop_and_resize", roi=(0, 0, 1)),
     "a start and an end per resized axis"),
    (dict(scales=(0.1, 0.1), mode="cubic", antialias=True), r"reads 1600 input elements per output \(at most 256"),
    (dict(sizes=(2, 4), keep_aspect_ratio_policy="fit"), "keep_aspect_ratio_policy must be one of"),
]


@pytest.mark.parametrize("attrs,msg", BAD, ids=[m.split()[0] for _, m in BAD])
def test_bad_attributes_name_the_op(attrs, msg):
    with pytest.raises(tefuse.GraphError, match=f"resize.*{msg}"):
        run_op("resize", np.zeros((3, 4), "float32"), **attrs)


def test_interpolating_bools_is_refused():
    with pytest.raises(tefuse.GraphError, match="linear interpolation needs a numeric input, got bool"):
        run_op("resize", np.zeros((3, 4), bool), scales=(1.0, 2.0), mode="linear")


def test_resize_then_elementwise_is_one_kernel(rng):
    """resize is a lazy value: resize -> add -> relu compiles to one kernel reading x directly."""
    x = rng.standard_normal((1, 2, 4, 4)).astype("float32")
    s = rng.standard_normal((1, 2, 8, 8)).astype("float32")
    b = tefuse.GraphBuilder()
    xi, si = b.input("x", x.shape), b.input("s", s.shape)
    y = b.relu(b.add(b.resize(xi, **op_attrs(scales=(1, 1, 2, 2), mode="linear")), si))
    cg = tefuse.build(b.build(y), "llvm")
    assert cg.num_kernels == 1
    want = np.maximum(reference(x, scales=(1, 1, 2, 2), mode="linear") + s, 0)
    np.testing.assert_allclose(cg.run(x, s)[0], want, rtol=1e-5, atol=1e-5)
