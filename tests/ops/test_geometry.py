"""Anchor ops declare their geometry (OpDef.geometry): typed, frozen shape facts that lowering
hands to templates in KernelInfo.geometry."""
from __future__ import annotations

import dataclasses

import pytest

from tefuse.ops import get_op, list_ops, register_op
from tefuse.ops.conv2d import Conv2dGeometry
from tefuse.ops.dense import GemmGeometry
from tefuse.ops.pool import LrnGeometry, PoolGeometry
from tefuse.ops.reduce import ReduceGeometry, SoftmaxGeometry
from tefuse.ops.registry import OpPattern


def geometry(op, in_shapes, out_shape, **attrs):
    d = get_op(op)
    return d.geometry_of(in_shapes, out_shape, d.normalize_attrs(attrs))


def test_conv2d_geometry_nchw_and_nhwc():
    g = geometry("conv2d", [(2, 64, 56, 56), (128, 64, 3, 3)], (2, 128, 28, 28), strides=2, padding=1)
    assert isinstance(g, Conv2dGeometry) and g.anchor_kind == "conv2d"
    assert (g.n, g.c, g.k, g.kh, g.kw, g.oh, g.ow, g.stride) == (2, 64, 128, 3, 3, 28, 28, (2, 2))
    assert (g.m, g.r, g.rc_axis, g.tiled_axes) == (2 * 28 * 28, 64 * 9, 0, (0, 1, 2))
    with pytest.raises(dataclasses.FrozenInstanceError):
        g.k = 1
    h = geometry("conv2d", [(1, 56, 56, 64), (3, 3, 64, 128)], (1, 56, 56, 128), padding=1, layout="NHWC")
    assert (h.c, h.k, h.rc_axis, h.tiled_axes) == (64, 128, 2, (2, 0, 1))


def test_depthwise_kind_comes_from_the_geometry():
    d = get_op("conv2d")
    assert d.anchor == "conv2d"
    shapes = [(1, 8, 6, 6), (16, 1, 3, 3)]
    g = d.geometry_of(shapes, (1, 16, 6, 6), d.normalize_attrs({"groups": 8, "padding": 1}))
    assert g.depthwise and g.multiplier == 2 and g.channels_per_group == 1
    assert d.anchor_kind(shapes, (1, 16, 6, 6), d.normalize_attrs({"groups": 8, "padding": 1})) == "depthwise_conv2d"


def test_gemm_geometry_of_dense_matmul_and_stacked_rows():
    assert geometry("dense", [(3, 1000), (100, 1000)], (3, 100)) == GemmGeometry(1, 3, 100, 1000, b_nk=True)
    assert geometry("matmul", [(2, 3, 8, 24), (3, 24, 10)], (2, 3, 8, 10)).dims == (6, 8, 10, 24)
    assert geometry("matmul", [(24,), (24, 10)], (10,)).dims == (1, 1, 10, 24)
    assert not geometry("matmul", [(8, 24), (24, 10)], (8, 10)).b_nk  # B stored [K, N]
    g = geometry("matmul", [(197, 1, 96), (96, 288)], (197, 1, 288))
    assert g == GemmGeometry(1, 197, 288, 96, stacked_rows_axis=0)


def test_reduction_geometries():
    r = geometry("reduce_sum", [(2, 49, 2048)], (2,), axes=(1, -1))
    assert r == ReduceGeometry(rows=2, extent=49 * 2048, innermost=True, axes=(1, 2)) and not r.window
    s = geometry("softmax", [(4, 10, 6)], (4, 10, 6), axis=1)
    assert s == SoftmaxGeometry(rows=24, extent=10, innermost=False, axis=1)
    p = geometry("max_pool2d", [(1, 8, 9, 9)], (1, 8, 5, 5), kernel=3, strides=2, padding=1)
    assert p == PoolGeometry("NCHW", (3, 3), rows=200, extent=9, innermost=True) and p.window
    gp = geometry("global_avg_pool2d", [(1, 7, 7, 64)], (1, 1, 1, 64), layout="NHWC")
    assert gp == PoolGeometry("NHWC", (7, 7), rows=64, extent=49, innermost=False)
    lrn = geometry("lrn", [(1, 8, 4, 4)], (1, 8, 4, 4), size=3)
    assert lrn == LrnGeometry(axis=1, size=3, rows=128, extent=3, innermost=False) and lrn.window


def test_anchors_are_template_family_names():
    """OpDef.anchor is a str (never a function); LRN has its own kind, not "pool"."""
    for name in list_ops():
        assert get_op(name).anchor is None or isinstance(get_op(name).anchor, str), name
    assert get_op("lrn").anchor == "lrn"
    with pytest.raises(TypeError, match="anchor"):
        register_op("bad_anchor_op", OpPattern.OUT_ELEMWISE_FUSABLE, anchor=lambda a, s: "conv2d")
