"""quantize_linear / dequantize_linear / requantize (tefuse/ops/quantize.py) on llvm against ONNX's
reference evaluator: bit-exact, ties included, per tensor / axis / block, int and float8 types."""
from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

from tefuse.errors import GraphError
from tests.reference import build_op, run_op


def _onnx(op_type, *inputs, opset=21, **attrs):
    names = [f"i{k}" for k in range(len(inputs))]
    node = helper.make_node(op_type, names, ["y"], **attrs)
    vis = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
           for n, v in zip(names, inputs)]
    g = helper.make_graph([node], "g", vis, [helper.make_empty_tensor_value_info("y")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    return ReferenceEvaluator(m).run(None, dict(zip(names, inputs)))[0]


def _ties(rng, shape, scale):
    """Values at and around halfway points of the scale grid, and far out of range."""
    k = rng.integers(-300, 300, shape).astype(np.float32)
    frac = rng.choice(np.array([0.0, 0.5, -0.5, 0.49, 1.5], np.float32), shape)
    return ((k + frac) * scale).astype(np.float32)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int4", "uint4", "int2"])
def test_quantize_per_tensor_rounds_half_to_even_and_saturates(dtype, rng):
    scale = np.float32(0.25)
    x = _ties(rng, (4, 33), scale)
    t = getattr(ml_dtypes, dtype) if dtype in ("int4", "uint4", "int2") else np.dtype(dtype)
    zp = np.array(1 if "u" in dtype else -1, t)
    got = run_op("quantize_linear", x, np.array(scale), zp, dtype=dtype)
    want = _onnx("QuantizeLinear", x, np.array(scale), zp)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.astype(np.int32), want.astype(np.int32))


def test_quantize_per_axis_and_blocked(rng):
    x = _ties(rng, (2, 6, 8), np.float32(0.1))
    s_axis = (rng.random(6) + 0.05).astype(np.float32)
    z_axis = rng.integers(-5, 5, 6).astype(np.int8)
    np.testing.assert_array_equal(run_op("quantize_linear", x, s_axis, z_axis, axis=1, dtype="int8"),
                                  _onnx("QuantizeLinear", x, s_axis, z_axis, axis=1))
    s_blk = (rng.random((2, 6, 3)) + 0.05).astype(np.float32)  # blocks of 3 along the last axis (8 = 3+3+2)
    z_blk = rng.integers(0, 20, (2, 6, 3)).astype(np.uint8)
    np.testing.assert_array_equal(run_op("quantize_linear", x, s_blk, z_blk, axis=-1, block_size=3, dtype="uint8"),
                                  _onnx("QuantizeLinear", x, s_blk, z_blk, axis=-1, block_size=3))


@pytest.mark.parametrize("fmt", ["float8_e4m3fn", "float8_e5m2"])
@pytest.mark.parametrize("saturate", [1, 0])
def test_quantize_to_float8(fmt, saturate, rng):
    x = np.concatenate([rng.standard_normal(64).astype(np.float32) * 300, [1e6, -1e6, 0.0]]).astype(np.float32)
    scale = np.array(0.5, np.float32)
    zp = np.zeros((), getattr(ml_dtypes, fmt))
    got = run_op("quantize_linear", x, scale, zp, dtype=fmt, saturate=bool(saturate))
    want = _onnx("QuantizeLinear", x, scale, zp, saturate=saturate)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("src", ["int8", "uint8", "int4", "float8_e4m3fn"])
def test_dequantize(src, rng):
    t = getattr(ml_dtypes, src) if src in ("int4", "float8_e4m3fn") else np.dtype(src)
    x = (rng.standard_normal((3, 5)) * 4).astype(np.float32).astype(t) if src.startswith("float") else \
        rng.integers(*((-8, 8) if src == "int4" else (0, 256) if src == "uint8" else (-128, 128)), (3, 5)).astype(t)
    scale = (rng.random(5) + 0.1).astype(np.float32)
    zp = np.zeros(5, t) if src.startswith("float") else rng.integers(0, 4, 5).astype(t)
    got = run_op("dequantize_linear", x, scale, zp, axis=1, src=src if src in ("int4", "float8_e4m3fn") else "")
    np.testing.assert_array_equal(got, _onnx("DequantizeLinear", x, scale, zp, axis=1))


def test_requantize_matches_qlinear_rounding(rng):
    acc = rng.integers(-5000, 5000, (4, 8)).astype(np.int32)
    mult = (rng.random(8) * 0.05).astype(np.float32)
    zp = np.array(3, np.int8)
    got = run_op("requantize", acc, mult, zp, axis=1, dtype="int8")
    want = np.clip(np.rint(acc * mult.astype(np.float64) + 3), -128, 127).astype(np.int8)
    np.testing.assert_array_equal(got, want)


def test_wrong_scale_shape_is_named():
    with pytest.raises(GraphError, match=r"quantize_linear.*per-axis scale must be 1-D of x's dim 1 \(6\)"):
        build_op("quantize_linear", np.zeros((2, 6), np.float32), np.ones(4, np.float32), np.zeros(4, np.uint8))


def test_a_half_quantize_rounds_in_float32_on_cuda():
    """CUDA 12 has no nearbyint for halves (hnearbyint): an fp16 QuantizeLinear (the float part of
    an int8 build is fp16) rounds its ratio as a float32, which is exact for a half."""
    import tefuse
    from tefuse.graph import GraphBuilder

    b = GraphBuilder()
    x = b.input("x", (64,), "float16")
    y = b.op("quantize_linear", x, b.const(np.array(0.05, np.float16)), b.const(np.array(3, np.int8)), dtype="int8")
    g = b.build(y)
    src = tefuse.build(g, "cuda:sm_90").kernels[0].source("cuda")
    assert "nearbyint" in src and "hnearbyint" not in src
    xv = (np.random.default_rng(0).standard_normal(64) * 4).astype(np.float16)
    want = np.clip(np.rint((xv / np.float16(0.05)).astype(np.float32)) + 3, -128, 127).astype(np.int8)
    np.testing.assert_array_equal(tefuse.build(g, "llvm").run(x=xv)[0], want)


def test_quantize_to_int32_rounds_half_to_even_in_64_bits(rng):
    """A range float32 cannot hold exactly (int32) takes the 64-bit path, not the float32 one,
    and saturates to the type's own ends."""
    scale = np.float32(0.25)
    x = np.concatenate([_ties(rng, (64,), scale), np.array([1e6, -1e6, 12345.5, 1e12, -1e12, np.inf], np.float32)])
    zp = np.array(-7, np.int32)
    got = run_op("quantize_linear", x, np.array(scale), zp, dtype="int32")
    want = np.clip(np.rint(x.astype(np.float64) / np.float64(scale)) + zp, -2 ** 31, 2 ** 31 - 1)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want.astype(np.int32))


def test_a_reciprocal_quantize_multiplies_by_a_folded_inverse_scale(rng):
    """reciprocal=True (a calibrated build's quantizers): round(x * (1 / scale)) in float32, the
    inverse of a constant scale folded into the code (no division in the CUDA kernel)."""
    import tefuse
    from tefuse.graph import GraphBuilder

    scale = np.float32(0.1)
    x = _ties(rng, (96,), scale)
    b = GraphBuilder()
    xi = b.input("x", (96,))
    g = b.build(b.op("quantize_linear", xi, b.const(np.array(scale)), b.const(np.array(0, np.int8)), dtype="int8",
                     reciprocal=True))
    want = np.clip(np.rint(x * (np.float32(1) / scale)), -128, 127).astype(np.int8)
    np.testing.assert_array_equal(tefuse.build(g, "llvm").run(x=x)[0], want)
    body = tefuse.build(g, "cuda:sm_90").kernels[0].source("cuda").split("main_kernel")[-1]
    assert "nearbyint" in body and "* 0x1.4p+3f" in body and not re.search(r"/ *-?0x", body)  # times 10, no division
