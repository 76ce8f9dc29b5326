"""Colour conversions against numpy: channel orders and alpha, OpenCV's gray weights; NV12 and
I420 frames against the BT.601 / BT.709 equations written out with their published
coefficients, full and limited range; normalize per channel from uint8."""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse.errors import TefuseError

# (y scale, y offset, R from V', G from U', G from V', B from U'): the published matrices
PUBLISHED = {
    ("bt601", "full"): (1.0, 0.0, 1.402, 0.344136, 0.714136, 1.772),
    ("bt601", "limited"): (1.164384, 16.0, 1.596027, 0.391762, 0.812968, 2.017232),
    ("bt709", "full"): (1.0, 0.0, 1.5748, 0.187324, 0.468124, 1.8556),
    ("bt709", "limited"): (1.164384, 16.0, 1.792741, 0.213249, 0.532909, 2.112402),
}


def yuv_to_rgb(y, u, v, standard, value_range):
    """Full-resolution Y, U, V (uint8) to float RGB in [0, 255]."""
    ys, yo, rv, gu, gv, bu = PUBLISHED[(standard, value_range)]
    yy = (y.astype(np.float64) - yo) * ys
    uu, vv = u.astype(np.float64) - 128, v.astype(np.float64) - 128
    rgb = np.stack([yy + rv * vv, yy - gu * uu - gv * vv, yy + bu * uu], axis=-1)
    return np.clip(rgb, 0, 255)


def run(graph_fn, *arrays):
    b = tefuse.GraphBuilder()
    ins = [b.input(f"x{k}", a.shape, str(a.dtype)) for k, a in enumerate(arrays)]
    outs = graph_fn(b, *ins)
    return tefuse.build(b.build(outs), "llvm").run(*arrays)


def test_channel_orders_alpha_and_gray(rng):
    rgb = rng.integers(0, 256, (5, 7, 3), dtype=np.uint8)
    rgba = rng.integers(0, 256, (5, 7, 4), dtype=np.uint8)
    codes3 = ["rgb2bgr", "rgb2rgba", "bgr2rgba", "rgb2gray", "bgr2gray", "gray2rgb"]
    got3 = run(lambda b, x, y: [b.color_convert(x, code=c) for c in codes3[:5]]
               + [b.color_convert(b.color_convert(x, code="rgb2gray"), code="gray2rgb")]
               + [b.color_convert(y, code=c) for c in ("rgba2rgb", "rgba2bgr", "rgba2bgra", "rgba2gray")],
               rgb, rgba)
    gray = np.clip(np.round(rgb @ np.array([0.299, 0.587, 0.114])), 0, 255).astype(np.uint8)[..., None]
    alpha = np.full((5, 7, 1), 255, np.uint8)
    want = [rgb[..., ::-1], np.concatenate([rgb, alpha], -1), np.concatenate([rgb[..., ::-1], alpha], -1),
            gray, np.clip(np.round(rgb[..., ::-1] @ np.array([0.299, 0.587, 0.114])), 0, 255).astype(np.uint8)[..., None],
            np.repeat(gray, 3, -1), rgba[..., :3], rgba[..., 2::-1], rgba[..., [2, 1, 0, 3]],
            np.clip(np.round(rgba[..., :3] @ np.array([0.299, 0.587, 0.114])), 0, 255).astype(np.uint8)[..., None]]
    for g, w in zip(got3, want):
        assert g.dtype == np.uint8
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("standard", ["bt601", "bt709"])
def test_nv12_and_i420_every_matrix_and_range(rng, standard):
    """Each pixel reads its 2x2 block's chroma; both ranges, RGB and BGR order, one build."""
    H, W = 8, 12
    y = rng.integers(0, 256, (H, W), dtype=np.uint8)
    u = rng.integers(0, 256, (H // 2, W // 2), dtype=np.uint8)
    v = rng.integers(0, 256, (H // 2, W // 2), dtype=np.uint8)
    uv = np.stack([u, v], -1).reshape(H // 2, W)
    got = run(lambda b, yy, uvv, uu, vv: [b.nv12_to_rgb(yy, uvv, standard=standard, range="full"),
                                          b.nv12_to_rgb(yy, uvv, standard=standard, range="limited", order="bgr"),
                                          b.i420_to_rgb(yy, uu, vv, standard=standard, range="limited"),
                                          b.i420_to_rgb(yy, uu, vv, standard=standard, range="full", dtype="uint8")],
              y, uv, u, v)
    up = lambda p: p.repeat(2, 0).repeat(2, 1)  # noqa: E731
    full = yuv_to_rgb(y, up(u), up(v), standard, "full")
    limited = yuv_to_rgb(y, up(u), up(v), standard, "limited")
    np.testing.assert_allclose(got[0], full, atol=0.02)
    np.testing.assert_allclose(got[1], limited[..., ::-1], atol=0.02)
    np.testing.assert_allclose(got[2], limited, atol=0.02)
    assert got[3].dtype == np.uint8
    assert np.abs(got[3].astype(int) - np.round(full)).max() <= 1


def test_normalize_per_channel_from_uint8(rng):
    x = rng.integers(0, 256, (2, 3, 4, 3), dtype=np.uint8)
    got = run(lambda b, xx: [b.normalize(xx, mul=1.4, sub=0.5, div=255.0),
                             b.normalize(xx, mul=(1.0, 2.0, 3.0), sub=(0.1, 0.2, 0.3), div=(2.0, 4.0, 8.0)),
                             b.normalize(xx, sub=(1.0, 2.0, 3.0), div=3.0, axis=1, dtype="float16")], x)
    xf = x.astype(np.float64)
    np.testing.assert_allclose(got[0], (xf * 1.4 - 0.5) / 255, rtol=1e-6)
    np.testing.assert_allclose(got[1], (xf * [1, 2, 3] - [0.1, 0.2, 0.3]) / [2, 4, 8], rtol=1e-6)
    assert got[2].dtype == np.float16
    np.testing.assert_allclose(got[2], (xf - np.array([1.0, 2.0, 3.0])[:, None, None]) / 3, rtol=1e-3)


@pytest.mark.parametrize("op, shapes, attrs, match", [
    ("color_convert", [(4, 4, 4)], dict(code="rgb2bgr"), "color_convert: rgb2bgr takes 3 channel"),
    ("color_convert", [(4, 4, 3)], dict(code="rgb2xyz"), "color_convert: unknown code 'rgb2xyz'"),
    ("nv12_to_rgb", [(4, 6), (2, 3)], {}, r"nv12_to_rgb: the UV plane must have shape \(2, 6\)"),
    ("nv12_to_rgb", [(4, 6), (2, 6)], dict(standard="bt2020"), "nv12_to_rgb: standard must be one of"),
    ("i420_to_rgb", [(5, 6), (2, 3), (2, 3)], {}, "i420_to_rgb: the Y plane must be"),
    ("normalize", [(2, 3)], dict(mul=(1.0, 2.0)), "normalize: mul must be one number or one per channel"),
])
def test_refusals_name_the_op(op, shapes, attrs, match):
    b = tefuse.GraphBuilder()
    with pytest.raises(TefuseError, match=match):
        b.op(op, *[b.input(f"x{k}", s, "uint8") for k, s in enumerate(shapes)], **attrs)
