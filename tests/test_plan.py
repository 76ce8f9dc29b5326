"""FusionPlan: add-time errors, compile once, execute many times with separate args."""
import re
import shutil

import numpy as np
import pytest

import tefuse
from tefuse.codegen.ptx import compile_to_ptx, cuda_kernel_names
from tefuse.errors import PlanStateError, TefuseError, UnsupportedFusion
from tefuse.plan import FusionPlan, TensorDesc
from tefuse.plan.spec import build_plan
from tests import reference as R


def _conv_bn_relu_plan(layout="NCHW"):
    shape = (1, 8, 10, 10) if layout == "NCHW" else (1, 10, 10, 8)
    wshape = (16, 8, 3, 3) if layout == "NCHW" else (3, 3, 8, 16)
    p = FusionPlan(TensorDesc(shape, layout=layout))
    hs = (p.add_conv(TensorDesc(wshape, layout="OIHW" if layout == "NCHW" else "HWIO"), padding=1),
          p.add_bias(), p.add_batch_norm(epsilon=1e-3), p.add_activation("leaky_relu", alpha=0.1))
    return p, hs


def _args(p, hs, rng, layout="NCHW"):
    hc, hb, hn, _ = hs
    a = p.new_args()
    w = rng.standard_normal(hc.arg_shapes[0]).astype("float32")
    b = rng.standard_normal(16).astype("float32")
    g, be, m = (rng.standard_normal(16).astype("float32") for _ in range(3))
    v = rng.random(16).astype("float32") + 0.5
    a.set_conv(hc, w)
    a.set_bias(hb, b)
    a.set_batch_norm(hn, g, be, m, v)

    def ref(x):
        axis = 1 if layout == "NCHW" else 3
        shape = [1, 1, 1, 1]
        shape[axis] = -1
        y = R.conv2d(x, w, padding=1, layout=layout) + b.reshape(shape)
        y = R.batch_norm(y, g, be, m, v, eps=1e-3, axis=axis)
        return np.where(y > 0, y, 0.1 * y)

    return a, ref


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_compile_once_execute_many(layout, rng):
    p, hs = _conv_bn_relu_plan(layout)
    p.compile("llvm")
    assert p.compiled.num_kernels == 1
    for _ in range(2):  # new args and inputs, same compiled kernel
        a, ref = _args(p, hs, rng, layout)
        x = rng.standard_normal(p.input.shape).astype("float32")
        np.testing.assert_allclose(p.execute(x, a), ref(x), rtol=1e-4, atol=1e-4)


def test_plan_is_one_cuda_kernel():
    p, _ = _conv_bn_relu_plan()
    p.compile("cuda")
    assert len(cuda_kernel_names(p.source("cuda"))) == 1


@pytest.mark.parametrize("target", ["cuda:sm_80", pytest.param("cuda:sm_90", marks=pytest.mark.slow)])
def test_a_small_grid_fp16_conv_plan_stays_one_cuda_kernel(target):
    """ResNet-50's 512-channel 3x3 conv at batch 1 in fp16: a build would split it (graph/split_k.py);
    a plan is one kernel, as MIOpen's is. (sm_90 schedules it for wgmma: about two minutes on
    two cores, so it is slow.)"""
    p = FusionPlan(TensorDesc((1, 7, 7, 512), dtype="float16", layout="NHWC"))
    p.add_conv(TensorDesc((3, 3, 512, 512), dtype="float16", layout="HWIO"), padding=1)
    p.add_activation("relu")
    p.compile(target)
    assert p.compiled.num_kernels == 1 and len(cuda_kernel_names(p.source("cuda"))) == 1
    assert not any(n.attrs.get("split_k") for n in p.compiled.graph.nodes)


def test_residual_add(rng):
    p = FusionPlan(TensorDesc((1, 4, 6, 6)))
    hc = p.add_conv(TensorDesc((4, 4, 1, 1)))
    he = p.add_elementwise("add")
    p.add_activation("relu")
    p.compile("llvm")
    a = p.new_args()
    w = rng.standard_normal((4, 4, 1, 1)).astype("float32")
    r = rng.standard_normal((1, 4, 6, 6)).astype("float32")
    a.set_conv(hc, w)
    a.set_elementwise(he, r)
    x = rng.standard_normal((1, 4, 6, 6)).astype("float32")
    np.testing.assert_allclose(p.execute(x, a), np.maximum(R.conv2d(x, w) + r, 0), rtol=1e-4, atol=1e-5)


def test_errors_at_add_time():
    p = FusionPlan(TensorDesc((1, 8, 10, 10)))
    with pytest.raises(UnsupportedFusion, match=r"step 0 \(bias\)"):
        p.add_bias()
    with pytest.raises(UnsupportedFusion, match="unknown activation 'swishy'"):
        p.add_activation("swishy")
    with pytest.raises(UnsupportedFusion, match="step 0 \\(conv2d\\).*input channels"):
        p.add_conv(TensorDesc((16, 4, 3, 3)))  # 4 != 8 input channels
    p.add_conv(TensorDesc((16, 8, 3, 3)))  # the refused steps left no trace
    with pytest.raises(UnsupportedFusion, match="one convolution"):
        p.add_conv(TensorDesc((16, 16, 3, 3)))
    with pytest.raises(UnsupportedFusion, match="do not broadcast"):
        p.add_elementwise("add", TensorDesc((1, 3, 8, 8)))


def test_nchw_weight_on_nhwc_plan():
    p = FusionPlan(TensorDesc((1, 10, 10, 8), layout="NHWC"))
    with pytest.raises(UnsupportedFusion, match="weight layout OIHW does not match the NHWC plan"):
        p.add_conv(TensorDesc((16, 8, 3, 3), layout="OIHW"))
    with pytest.raises(UnsupportedFusion, match="read as HWIO"):
        p.add_conv(TensorDesc((16, 8, 3, 3)))  # shape of an OIHW weight, no layout given


def test_state_errors(rng):
    p, hs = _conv_bn_relu_plan()
    x = rng.standard_normal((1, 8, 10, 10)).astype("float32")
    with pytest.raises(PlanStateError, match="not compiled"):
        p.execute(x, p.new_args())
    p.compile("llvm")
    with pytest.raises(PlanStateError, match="not set: s0_weight"):
        p.execute(x, p.new_args())
    a, _ = _args(p, hs, rng)
    with pytest.raises(PlanStateError, match="must have shape"):
        a.set_bias(hs[1], np.zeros(3, "float32"))
    with pytest.raises(PlanStateError, match="is a bias, not a conv2d"):
        a.set_conv(hs[1], np.zeros(16, "float32"))
    p.add_activation("tanh")
    with pytest.raises(PlanStateError, match="changed after compile"):
        p.execute(x, a)


def _fp16_nhwc_plan(shape=(2, 8, 8, 16), k=16):
    """conv + bias + batch-norm + ReLU on an fp16 NHWC input, channels whole 16-byte copies."""
    p = FusionPlan(TensorDesc(shape, dtype="float16", layout="NHWC"))
    hs = (p.add_conv(TensorDesc((3, 3, shape[3], k), dtype="float16", layout="HWIO"), padding=1),
          p.add_bias(), p.add_batch_norm(), p.add_activation("relu"))
    return p, hs


def _fp16_args(a, hs, rng):
    """Sets the plan's arguments (weight HWIO, as users pass it); returns them in float32."""
    hc, hb, hn, _ = hs
    w = (rng.standard_normal(hc.arg_shapes[0]) * 0.2).astype("float16")
    k = hc.arg_shapes[0][3]
    b, g, be, m = (rng.standard_normal(k).astype("float16") for _ in range(4))
    v = (rng.random(k) + 0.5).astype("float16")
    a.set_conv(hc, w)
    a.set_bias(hb, b)
    a.set_batch_norm(hn, g, be, m, v)
    return [t.astype("float32") for t in (w, b, g, be, m, v)]


def _fp16_reference(x, w, b, g, be, m, v):
    y = R.conv2d(x.astype("float32"), w, padding=1, layout="NHWC") + b
    return np.maximum(R.batch_norm(y, g, be, m, v, eps=1e-5, axis=3), 0)


def test_ohwi_weight_converted_when_set_computes_the_same(rng, monkeypatch):
    """The Hopper layout on llvm (kernel_layouts forced): the plan declares its conv weight OHWI,
    the user still passes HWIO, set_conv converts it once, and the result matches float32 numpy
    within fp16 tolerance and the HWIO plan's result exactly."""
    x = rng.standard_normal((2, 8, 8, 16)).astype("float16")
    plain, hs = _fp16_nhwc_plan()
    plain.compile("llvm")
    assert plain.kernel_layouts("llvm") == {}
    a = plain.new_args()
    ref = _fp16_reference(x, *_fp16_args(a, hs, np.random.default_rng(1)))
    want = plain.execute(x, a)
    p, hs = _fp16_nhwc_plan()
    monkeypatch.setattr(p, "kernel_layouts", lambda *_, **__: {"s0_weight": "OHWI"})
    p.compile("llvm")
    conv = next(n for n in p.compiled.graph.nodes if n.op == "conv2d")
    assert conv.attrs["weight_layout"] == "OHWI" and conv.inputs[1].shape == (16, 3, 3, 16)
    a = p.new_args()
    w = _fp16_args(a, hs, np.random.default_rng(1))[0]
    assert a.values["s0_weight"].shape == (16, 3, 3, 16)  # converted when set, not per execute
    np.testing.assert_array_equal(a.values["s0_weight"].astype("float32"), w.transpose(3, 0, 1, 2))
    got = p.execute(x, a)
    np.testing.assert_allclose(got.astype("float32"), ref, rtol=2e-2, atol=2e-2)
    np.testing.assert_array_equal(got, want)  # the same sums in the same order: bit for bit


def test_args_set_before_compile_are_converted_once():
    """Args made before compile (or for another target) hold the user's layout; execute converts
    them to the kernel's once, and back where a later compile reads the user's."""
    p, hs = _fp16_nhwc_plan()
    a = p.new_args()
    w = np.arange(3 * 3 * 16 * 16, dtype="float16").reshape(3, 3, 16, 16)
    a.set_conv(hs[0], w)
    assert a.values["s0_weight"] is not None and a.values["s0_weight"].shape == (3, 3, 16, 16)
    a.read_as({"s0_weight": "OHWI"})
    np.testing.assert_array_equal(a.values["s0_weight"], w.transpose(3, 0, 1, 2))
    a.set_conv(hs[0], w)  # set again: converted at once
    assert a.values["s0_weight"].shape == (16, 3, 3, 16)
    a.read_as({})
    np.testing.assert_array_equal(a.values["s0_weight"], w)


@pytest.mark.parametrize("target, precision, dtype, layout", [
    ("cuda:sm_90", "fp16", "float16", "NHWC"), ("cuda:sm_90", "tf32", "float32", "NHWC"),
    ("cuda:sm_80", "fp16", "float16", "NHWC"), ("cuda:sm_90", "fp32", "float32", "NHWC"),
    ("cuda:sm_90", "fp16", "float32", "NHWC"), ("cuda:sm_90", "fp16", "float16", "NCHW"),
    ("llvm", "fp16", "float16", "NHWC")])
def test_weight_stored_ohwi_only_where_wgmma_runs(target, precision, dtype, layout):
    """OHWI on sm_90 for fp16/bf16 or tf32 NHWC convs; a float32 plan at fp16 keeps HWIO (its
    input's cast could not be read by wgmma's copies: a second kernel); elsewhere the user's
    layout, the graph unchanged."""
    shape, wshape = ((2, 16, 16, 64), (3, 3, 64, 64)) if layout == "NHWC" else ((2, 64, 16, 16), (64, 64, 3, 3))
    p = FusionPlan(TensorDesc(shape, dtype=dtype, layout=layout))
    p.add_conv(TensorDesc(wshape, dtype=dtype), padding=1)
    p.add_activation("relu")
    ohwi = target == "cuda:sm_90" and layout == "NHWC" and precision in ("fp16", "tf32") and (
        dtype == "float16" or precision == "tf32")
    assert p.kernel_layouts(target, precision) == ({"s0_weight": "OHWI"} if ohwi else {})
    g = p.kernel_graph(target, precision)
    assert (g is p.graph or g.text() == p.graph.text()) != ohwi
    if ohwi:
        assert g.node("s0_weight").shape == (64, 3, 3, 64)
        assert g.node("s0_conv2d").attrs["weight_layout"] == "OHWI"


def test_an_image_conv_reads_its_padded_form_on_hopper():
    """An image's 3 channels on sm_90: the weight is read in the constant pass's form (channels
    padded to 4, pixels paired for the stride-2 stem, rows widened); elsewhere HWIO as given."""
    p = FusionPlan(TensorDesc((2, 32, 32, 3), dtype="float16", layout="NHWC"))
    p.add_conv(TensorDesc((7, 7, 3, 64), dtype="float16"), stride=2, padding=3)
    assert p.kernel_layouts("cuda:sm_90", "fp16") == {"s0_weight": "OHWI:c4:pairs1x4"}
    assert p.kernel_layouts("cuda:sm_80", "fp16") == {}
    g = p.kernel_graph("cuda:sm_90", "fp16")
    assert g.node("s0_weight").shape == (64, 7, 4, 8)
    conv = g.node("s0_conv2d")
    assert conv.attrs["weight_layout"] == "OHWI" and conv.inputs[0].shape == (2, 32, 16, 8)


@pytest.mark.parametrize("shape, wshape, stride, pad, dtype", [
    ((2, 12, 12, 3), (7, 7, 3, 32), 2, 3, "float16"),   # the stem: pixels paired
    ((2, 9, 9, 3), (3, 3, 3, 32), 1, 1, "float16"),     # 4 channels, rows widened to 4 taps
    ((2, 10, 10, 8), (3, 3, 8, 32), 1, 1, "float16"),   # whole copies, rows widened
    ((2, 12, 12, 3), (7, 7, 3, 32), 2, 3, "float32")])  # tf32's stem: 4 channels, rows of 8 taps
def test_an_image_conv_set_at_run_time_computes_the_same_in_its_form(rng, monkeypatch, shape, wshape, stride, pad,
                                                                      dtype):
    """The sm_90 form on llvm (kernel_layouts as sm_90 gives them): the user's HWIO weight is
    padded, paired and widened once when set, the input padded by a copy, and the plan computes
    what numpy does; before compile the args hold the user's array."""
    x = rng.standard_normal(shape).astype(dtype)
    w = (rng.standard_normal(wshape) * 0.3).astype(dtype)
    p = FusionPlan(TensorDesc(shape, dtype=dtype, layout="NHWC"))
    h = p.add_conv(TensorDesc(wshape, dtype=dtype), stride=stride, padding=pad)
    p.add_activation("relu")
    layouts = p.kernel_layouts("cuda:sm_90", "fp16" if dtype == "float16" else "tf32")
    assert layouts["s0_weight"].startswith("OHWI:")
    early = p.new_args()
    early.set_conv(h, w)
    assert early.values["s0_weight"] is w
    monkeypatch.setattr(p, "kernel_layouts", lambda *_, **__: layouts)
    p.compile("llvm")
    a = p.new_args()
    a.set_conv(h, w)
    assert a.values["s0_weight"].shape == p.compiled.graph.node("s0_weight").shape != wshape
    ref = np.maximum(R.conv2d(x.astype(np.float64), w.astype(np.float64), strides=stride, padding=pad,
                              layout="NHWC"), 0)
    R.assert_close(p.execute(x, a), ref, dtype)
    R.assert_close(p.execute(x, early), ref, dtype)  # converted at its first execute


def _grouped_plan(groups=8, cg=4, shape=(2, 6, 6, 32)):
    """A grouped fp16 NHWC conv + ReLU plan (ResNeXt's 4 channels a group)."""
    p = FusionPlan(TensorDesc(shape, dtype="float16", layout="NHWC"))
    h = p.add_conv(TensorDesc((3, 3, cg, shape[3]), dtype="float16", layout="HWIO"), padding=1, groups=groups)
    p.add_activation("relu")
    return p, h


def test_grouped_weight_made_dense_when_set_computes_the_same(rng, monkeypatch):
    """The tensor cores' dense form on llvm (kernel_layouts forced): the plan declares its grouped
    weight dense and OHWI, the user passes the grouped HWIO weight, set_conv expands it once, and
    the result matches the grouped conv."""
    x = rng.standard_normal((2, 6, 6, 32)).astype("float16")
    w = (rng.standard_normal((3, 3, 4, 32)) * 0.3).astype("float16")
    p, h = _grouped_plan()
    monkeypatch.setattr(p, "kernel_layouts", lambda *_, **__: {"s0_weight": "OHWI:dense8"})
    p.compile("llvm")
    conv = next(n for n in p.compiled.graph.nodes if n.op == "conv2d")
    assert conv.attrs["groups"] == 1 and conv.inputs[1].shape == (32, 3, 3, 32)
    a = p.new_args()
    a.set_conv(h, w)
    assert a.values["s0_weight"].shape == (32, 3, 3, 32)  # expanded when set, not per execute
    ref = np.maximum(R.conv2d(x.astype(np.float64), w.astype(np.float64), padding=1, layout="NHWC", groups=8), 0)
    R.assert_close(p.execute(x, a), ref, "float16")
    a.read_as({})  # and back to the user's grouped weight
    np.testing.assert_array_equal(a.values["s0_weight"], w)


@pytest.mark.parametrize("target, groups, cg, want", [
    ("cuda:sm_90", 32, 4, "OHWI:dense32"), ("cuda:sm_80", 32, 4, "HWIO:dense32"), ("llvm", 32, 4, None),
    ("cuda:sm_90", 128, 1, None),  # depthwise: its own template
    ("cuda:sm_90", 64, 2, None)])  # tiny groups (and more than 32)
def test_grouped_weight_dense_where_the_tensor_cores_take_it(target, groups, cg, want):
    p, _ = _grouped_plan(groups, cg, (2, 8, 8, groups * cg))
    assert p.kernel_layouts(target, "fp16") == ({"s0_weight": want} if want else {})
    g = p.kernel_graph(target, "fp16")
    assert g.node("s0_conv2d").attrs["groups"] == (1 if want else groups)


needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


@needs_nvcc
def test_hopper_fp16_nhwc_plan_runs_its_weight_on_wgmma():
    """Compile only: the sm_90 fp16 NHWC plan is one wgmma_gemm kernel reading the OHWI weight,
    and nvcc compiles its CUDA to wgmma.mma_async."""
    p, _ = _fp16_nhwc_plan((2, 16, 16, 64), 64)
    p.compile("cuda:sm_90", precision="fp16")
    (k,) = p.compiled.kernels
    src = k.source("cuda")
    assert k.template == "wgmma_gemm" and "wgmma" in src
    assert re.search(r"wgmma\.mma_async", compile_to_ptx(src, "sm_90a"))


# -- image pre-processing steps -----------------------------------------------------------------
def _image_reference(images, rects, size, keep, background, mul, sub, div):
    from tefuse.bench.preprocess import crop_resize_reference

    planes = [crop_resize_reference(lambda r, c, im=images[k]: im[r, c].astype(np.float64), images.shape[1:3],
                                    [(x, y, w, h)], size, keep, background) for k, x, y, w, h in rects]
    return ((np.concatenate(planes) * mul - np.asarray(sub)) / div)[..., ::-1]


def test_plan_crop_resize_normalize_bgr_with_run_time_rectangles(rng):
    """A batch of two NHWC uint8 images, rectangles (image, x, y, w, h) set at run time: one
    kernel; new rectangles run on the same compiled kernel."""
    imgs = rng.integers(0, 256, (2, 40, 50, 3), dtype=np.uint8)
    plan = FusionPlan(TensorDesc((2, 40, 50, 3), "uint8", "NHWC"))
    crop = plan.add_crop_resize(3, (12, 10), keep_aspect_ratio=True, background=(1.0, 2.0, 3.0))
    plan.add_normalize(mul=1.4, sub=(0.5, 0.25, 0.0), div=255.0)
    plan.add_color_convert("rgb2bgr")
    plan.compile("llvm")
    cg = plan.compiled
    assert cg.num_kernels == 1
    args = plan.new_args()
    for rects in ([[0, 0, 0, 30, 20], [1, 10, 5, 8, 33], [1, 40, 30, 10, 10]],
                  [[1, 3, 3, 3, 3], [0, 0, 0, 50, 40], [0, 20, 1, 25, 12]]):
        args.set_rects(crop, rects)
        got = plan.execute(imgs, args)
        want = _image_reference(imgs, rects, (12, 10), True, (1.0, 2.0, 3.0), 1.4, (0.5, 0.25, 0.0), 255.0)
        np.testing.assert_allclose(got, want, atol=1e-5)
        assert plan.compiled is cg


def test_chain_spec_image_pipeline_and_its_refusals():
    plan = build_plan("crop_resize(n=5,h=60,w=60,keep=1,background=114)+normalize(mul=1.4,sub=0.5,div=255)+rgb2bgr",
                      (1, 2160, 3840, 3), "uint8", "NHWC")
    assert plan.output_desc.shape == (5, 60, 60, 3) and plan.output_desc.dtype == "float32"
    assert len(plan.graph.inputs) == 2 and plan.graph.inputs[1].shape == (5, 5)
    with pytest.raises(UnsupportedFusion, match=r"step 0 \(crop_resize\): image steps read channels last"):
        build_plan("crop_resize(n=2,h=8,w=8)", (1, 3, 32, 32), "uint8", "NCHW")
    with pytest.raises(TefuseError, match="crop_resize needs h and w"):
        build_plan("crop_resize(n=2,h=8)", (1, 32, 32, 3), "uint8", "NHWC")
    with pytest.raises(TefuseError, match="normalize.*unknown parameter"):
        build_plan("crop_resize(n=2,h=8,w=8)+normalize(scale=2)", (1, 32, 32, 3), "uint8", "NHWC")


def test_plan_planes_of_their_own_sizes_and_asymmetric_coordinates(rng):
    """crop_resize steps with each plane's size set at run time (rows of 7) and FKL's asymmetric
    coordinates: each plane equals the op's own resize of its rectangle; the chain syntax spells
    them sizes=1 and coordinate=asymmetric."""
    imgs = rng.integers(0, 256, (1, 40, 50, 3), dtype=np.uint8)
    plan = FusionPlan(TensorDesc(imgs.shape, "uint8", "NHWC"))
    crop = plan.add_crop_resize(2, (12, 16), background=7.0, coordinate="asymmetric", plane_sizes=True)
    plan.compile("llvm")
    args = plan.new_args()
    rows = [[0, 3, 4, 20, 10, 12, 16], [0, 10, 2, 9, 30, 5, 7]]
    args.set_rects(crop, rows)
    got = plan.execute(imgs, args)
    for k, (_, x, y, w, h, oh, ow) in enumerate(rows):
        b = tefuse.GraphBuilder()
        one = b.crop_resize(b.input("image", imgs.shape[1:], "uint8"), b.input("rects", (1, 4), "int32"), size=(oh, ow),
                            coordinate="asymmetric")
        want = tefuse.build(b.build(one), "llvm").run(imgs[0], np.array([[x, y, w, h]], np.int32))[0][0]
        # 255-scale pixels: the run-time size divides, the constant one multiplies by its
        # reciprocal (ops/fastmath.py); the scales differ in their last bit
        np.testing.assert_allclose(got[k, :oh, :ow], want, atol=1e-3)
        assert (got[k, oh:] == 7).all() and (got[k, :, ow:] == 7).all()
    spec = build_plan("crop_resize(n=2,h=12,w=16,sizes=1,coordinate=asymmetric)", imgs.shape, "uint8", "NHWC")
    spec.compile("llvm")
    node = next(n for n in spec.compiled.graph.nodes if n.op == "crop_resize")
    assert node.attrs["plane_sizes"] and node.attrs["coordinate"] == "asymmetric" and node.inputs[1].shape == (2, 7)
