"""crop and crop_resize against onnxruntime's Resize of each numpy crop (half_pixel; nearest
round_prefer_floor, linear, cubic), keep_aspect_ratio against the same resize pasted centred on
the background; rectangles changed on one compiled graph; rectangles reaching past the image;
a batch of images; refusals naming the op."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

import tefuse
from tefuse.errors import TefuseError

# float64 references against float32 source coordinates (ops/crop.py): a 128-pixel axis's
# coordinates within 1e-5 pixel move an 8-bit image's values by a few thousandths of a level
ATOL = 5e-3


def ort_resize(x: np.ndarray, size: tuple[int, int], mode: str, coordinate: str = "half_pixel") -> np.ndarray:
    """onnxruntime's Resize-19 of an [h, w, C] float32 image to size."""
    sizes = np.array([1, x.shape[2], *size], np.int64)
    node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode=mode,
                            coordinate_transformation_mode=coordinate, nearest_mode="round_prefer_floor")
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", 1, [1, x.shape[2], *x.shape[:2]])],
                          [helper.make_tensor_value_info("y", 1, None)], [numpy_helper.from_array(sizes, "sizes")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    y = sess.run(None, {"x": np.ascontiguousarray(x.transpose(2, 0, 1)[None], np.float32)})[0]
    return y[0].transpose(1, 2, 0)


def fit(w: int, h: int, ow: int, oh: int) -> tuple[int, int]:
    """(th, tw): the rectangle scaled to height oh, or, where its width would then pass ow, to
    width ow; the other side rounded half up."""
    tw = int(np.floor(w * oh / h + 0.5))
    if tw > ow:
        return max(int(np.floor(h * ow / w + 0.5)), 1), ow
    return oh, max(tw, 1)


def reference(img: np.ndarray, rects: np.ndarray, size, mode="linear", keep=False, background=0.0,
              coordinate="half_pixel") -> np.ndarray:
    """Each rectangle cut with numpy (the image's edge repeated where it reaches past it), resized
    by onnxruntime; with keep, to the fitted size pasted centred on the background."""
    oh, ow = size
    H, W = img.shape[:2]
    src = img.astype(np.float32).reshape(H, W, -1)
    out = []
    for x, y, w, h in rects:
        rows = np.clip(np.arange(y, y + h), 0, H - 1)
        cols = np.clip(np.arange(x, x + w), 0, W - 1)
        crop = src[rows][:, cols]
        plane = np.empty((oh, ow, src.shape[2]), np.float32)
        plane[...] = np.asarray(background, np.float32)
        th, tw = fit(w, h, ow, oh) if keep else (oh, ow)
        y0, x0 = (oh - th) // 2, (ow - tw) // 2
        plane[y0:y0 + th, x0:x0 + tw] = ort_resize(crop, (th, tw), mode, coordinate)
        out.append(plane)
    return np.stack(out).reshape(len(rects), oh, ow, *img.shape[2:])


RECTS = np.array([[0, 0, 34, 25], [10, 10, 70, 15], [20, 20, 60, 59], [30, 30, 20, 23], [40, 40, 12, 11]], np.int32)


def build(img_shape, n, dtype="uint8", rect_cols=4, **variants):
    """One graph: a crop_resize per named variant of the same image and rectangles."""
    b = tefuse.GraphBuilder()
    x = b.input("image", img_shape, dtype)
    r = b.input("rects", (n, rect_cols), "int32")
    outs = [b.crop_resize(x, r, **attrs) for attrs in variants.values()]
    return tefuse.build(b.build(outs), "llvm"), list(variants.values())


def test_crop_resize_every_mode_against_onnxruntime(rng):
    """Up- and downscaling crops of different shapes: each plane is onnxruntime's Resize of the crop."""
    img = rng.integers(0, 256, (96, 128, 3), dtype=np.uint8)
    cg, variants = build(img.shape, len(RECTS), nearest=dict(size=(24, 40), mode="nearest"),
                         linear=dict(size=(24, 40), mode="linear"), cubic=dict(size=(24, 40), mode="cubic"))
    for attrs, got in zip(variants, cg.run(img, RECTS)):
        want = reference(img, RECTS, attrs["size"], attrs["mode"])
        np.testing.assert_allclose(got, want, atol=ATOL, err_msg=attrs["mode"])


def test_asymmetric_coordinates_against_onnxruntime(rng):
    """coordinate="asymmetric" (source x = output x * scale: ONNX's asymmetric transform, what the
    Fused Kernel Library's Resize computes), kept aspect ratio included."""
    img = rng.integers(0, 256, (96, 128, 3), dtype=np.uint8)
    cg, variants = build(img.shape, len(RECTS), plain=dict(size=(24, 40), coordinate="asymmetric"),
                         keep=dict(size=(60, 60), coordinate="asymmetric", keep_aspect_ratio=True, background=7.0))
    for attrs, got in zip(variants, cg.run(img, RECTS)):
        want = reference(img, RECTS, attrs["size"], keep=attrs.get("keep_aspect_ratio", False),
                         background=attrs.get("background", 0.0), coordinate="asymmetric")
        np.testing.assert_allclose(got, want, atol=ATOL)


def test_keep_aspect_ratio_centres_the_fit_on_the_background(rng):
    """Wide and tall rectangles: the fitted plane sits centred, the bands hold the per-channel
    background; the rectangles change on the same compiled graph (no rebuild)."""
    img = rng.integers(0, 256, (96, 128, 3), dtype=np.uint8)
    bg = (7.0, 100.0, 250.0)
    cg, (attrs,) = build(img.shape, len(RECTS), keep=dict(size=(60, 60), keep_aspect_ratio=True, background=bg))
    for rects in (RECTS, np.array([[5, 3, 17, 80], [50, 1, 77, 9], [0, 0, 128, 96], [9, 9, 1, 1], [3, 60, 45, 30]],
                                  np.int32)):
        (got,) = cg.run(img, rects)
        want = reference(img, rects, (60, 60), keep=True, background=bg)
        np.testing.assert_allclose(got, want, atol=ATOL)
        # the bottom-right band is the wider of two when their sum is odd: never empty
        banded = [k for k, (_, _, w, h) in enumerate(rects) if fit(w, h, 60, 60) != (60, 60)]
        assert banded
        np.testing.assert_array_equal(got[banded, -1, -1], np.broadcast_to(np.float32(bg), (len(banded), 3)))


def test_rectangles_past_the_image_read_its_edge(rng):
    img = rng.standard_normal((16, 20, 2)).astype(np.float32)
    rects = np.array([[14, 10, 12, 9], [-3, -2, 6, 5]], np.int32)
    cg, _ = build(img.shape, 2, dtype="float32", linear=dict(size=(7, 9)))
    (got,) = cg.run(img, rects)
    np.testing.assert_allclose(got, reference(img, rects, (7, 9)), atol=1e-5)


def test_batch_of_images_and_gray(rng):
    """[N, H, W, C] images with rows (image, x, y, w, h); a single-channel [H, W] image."""
    imgs = rng.integers(0, 65536, (3, 20, 24, 3), dtype=np.uint16)
    rects = np.array([[2, 1, 1, 10, 12], [0, 4, 3, 20, 8], [1, 0, 0, 24, 20]], np.int32)
    cg, _ = build(imgs.shape, 3, dtype="uint16", rect_cols=5, linear=dict(size=(10, 10)))
    (got,) = cg.run(imgs, rects)
    want = np.concatenate([reference(imgs[r[0]], r[None, 1:], (10, 10)) for r in rects])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=0.05)

    gray = rng.integers(0, 256, (20, 24), dtype=np.uint8)
    cg, _ = build(gray.shape, 2, nearest=dict(size=(5, 6), mode="nearest", dtype="uint8"))
    (got,) = cg.run(gray, rects[:2, 1:])
    assert got.shape == (2, 5, 6) and got.dtype == np.uint8
    np.testing.assert_array_equal(got, reference(gray, rects[:2, 1:], (5, 6), "nearest").astype(np.uint8))


def test_crop_fixed_planes(rng):
    """crop: each rectangle at the top-left of its plane, the rest (and what lies past the image)
    the background."""
    img = rng.integers(0, 256, (12, 16, 3), dtype=np.uint8)
    rects = np.array([[2, 3, 4, 5], [13, 9, 6, 6]], np.int32)
    b = tefuse.GraphBuilder()
    y = b.crop(b.input("image", img.shape, "uint8"), b.input("rects", (2, 4), "int32"), size=(6, 5), background=9)
    (got,) = tefuse.build(b.build(y), "llvm").run(img, rects)
    want = np.full((2, 6, 5, 3), 9, np.uint8)
    want[0, :5, :4] = img[3:8, 2:6]
    want[1, :3, :3] = img[9:12, 13:16]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("attrs, rects_shape, match", [
    (dict(size=(4,)), (2, 4), "size must be"),
    (dict(size=(4, 4), mode="area"), (2, 4), "mode must be one of"),
    (dict(size=(4, 4)), (2, 5), r"rects must be \[n, 4\]"),
    (dict(size=(4, 4), background=(1, 2)), (2, 4), "background must be one value or one per channel"),
    (dict(size=(4, 4), background="grey"), (2, 4), "background must be a number or one per channel"),
    (dict(size=(4, 4), dtype="bool"), (2, 4), "dtype must be a numeric type"),
    (dict(size=(4, 4), coordinate="align_corners"), (2, 4), "coordinate must be one of"),
    (dict(size=(4, 4), plane_sizes=True), (2, 4), r"rects must be \[n, 6\] rows of x, y, w, h, out_h, out_w"),
])
def test_refusals_name_the_op(attrs, rects_shape, match):
    b = tefuse.GraphBuilder()
    with pytest.raises(TefuseError, match=f"crop_resize.*{match}"):
        b.crop_resize(b.input("image", (8, 8, 3), "uint8"), b.input("rects", rects_shape, "int32"), **attrs)


def test_rectangles_must_be_integers_and_match_a_batch():
    b = tefuse.GraphBuilder()
    with pytest.raises(TefuseError, match="crop: rects must be an integer tensor"):
        b.crop(b.input("image", (8, 8, 3), "uint8"), b.input("rects", (2, 4), "float32"), size=(2, 2))
    with pytest.raises(TefuseError, match=r"crop_resize: rects must be \[n, 5\] rows of image, x, y, w, h"):
        b.crop_resize(b.input("frames", (2, 8, 8, 3), "uint8"), b.input("r", (2, 4), "int32"), size=(2, 2))


@pytest.mark.parametrize("mode, keep", [("linear", True), ("nearest", False)])
def test_index_arithmetic_of_a_batch_past_2_to_the_31_elements(mode, keep):
    """A batch of 4K frames past 2^31 - 1 elements lowers with 64-bit loops: the rectangles,
    their fit and the taps follow the loops' index type (lowered only, nothing allocated)."""
    from tefuse.codegen.lower import lower_group
    from tefuse.fusion import fuse_graph

    b = tefuse.GraphBuilder()
    x = b.input("frames", (260, 2160, 3840, 1), "uint8")
    r = b.crop_resize(x, b.input("rects", (4, 5), "int32"), size=(8, 8), mode=mode, keep_aspect_ratio=keep)
    y = b.crop(x, b.input("rects2", (2, 5), "int32"), size=(4, 4))
    for out in (r, y):
        (g,) = fuse_graph(b.build(out))
        assert "T.int64(" in lower_group(g).func.script()


@pytest.mark.parametrize("keep", [False, True])
def test_planes_of_different_sizes_in_one_launch_against_separate_resizes(rng, keep):
    """plane_sizes: each row names its own output size (horizontal fusion of planes of different
    sizes, as FKL launches them on blockIdx.z); each plane equals a resize of its rectangle to its
    own size, the rest of the plane is background; new sizes need no rebuild."""
    img = rng.integers(0, 256, (96, 128, 3), dtype=np.uint8)
    b = tefuse.GraphBuilder()
    y = b.crop_resize(b.input("image", img.shape, "uint8"), b.input("rects", (3, 6), "int32"), size=(30, 40),
                      plane_sizes=True, keep_aspect_ratio=keep, background=9.0)
    cg = tefuse.build(b.build(y), "llvm")
    assert cg.num_kernels == 1
    for sizes in ([(24, 40), (10, 12), (30, 30)], [(5, 7), (30, 40), (1, 1)]):
        rows = np.array([[*r, *s] for r, s in zip(RECTS[:3], sizes)], np.int32)
        got = cg.run(img, rows)[0]
        for k, (oh, ow) in enumerate(sizes):
            want = reference(img, RECTS[k:k + 1], (oh, ow), keep=keep, background=9.0)[0]
            np.testing.assert_allclose(got[k, :oh, :ow], want, atol=ATOL, err_msg=f"plane {k} {oh}x{ow}")
            rest = np.ones(got.shape[1:3], bool)
            rest[:oh, :ow] = False
            assert (got[k][rest] == 9.0).all()
