"""Max pools on int8 / uint8 codes, and on float8 codes of values >= 0 (graph/pool_codes.py): the
same codes as quantizing the float pool's output, bit for bit on llvm, and the quantize moved into
the kernel that makes the pool's input."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tefuse
from tefuse.driver import prepare_graph
from tefuse.fusion import fuse_graph
from tefuse.graph.pool_codes import quantize_before_max_pool


def _pooled(dtype="int8", scale=0.05, zero=0, readers=1, conv=False, pool_is_output=False, on_input=False,
            act="relu"):
    """x (-> conv) -> `act` -> 3x3/2 max pool (padding 1) -> quantize_linear(dtype), dequantized
    (float8: codes held as uint8, as a calibrated build's quantizers make them)."""
    b = tefuse.GraphBuilder()
    x = b.input("x", (2, 4, 9, 9))
    rng = np.random.default_rng(0)
    if conv:
        x = b.conv2d(x, b.const(rng.standard_normal((4, 4, 3, 3)).astype("float32")), padding=1)
    p = b.max_pool2d(x if on_input else b.op(act, x, **({"min": 0.0, "max": 6.0} if act == "clip" else {})),
                     kernel=(3, 3), strides=(2, 2), padding=(1, 1))
    float8 = dtype.startswith("float8")
    zt = "uint8" if dtype == "uint8" or float8 else "int8"
    s, z = b.const(np.array(scale, "float32")), b.const(np.array(zero, zt))
    q = b.quantize_linear(p, s, z, dtype=dtype)
    dq = b.dequantize_linear(q, s, z, **({"src": dtype} if float8 else {}))
    outs = [dq] + ([b.relu(p)] if readers == 2 else []) + ([p] if pool_is_output else [])
    return b.build(outs)


def _numpy(x, scale, zero, dtype):
    pad = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    win = np.lib.stride_tricks.sliding_window_view(pad, (3, 3), axis=(2, 3))[:, :, ::2, ::2]
    lo, hi = (-128, 127) if dtype == "int8" else (0, 255)
    q = np.clip(np.rint(win.max(axis=(-1, -2)) / np.float32(scale)) + zero, lo, hi)
    return ((q - zero) * np.float32(scale)).astype(np.float32)


@pytest.mark.parametrize("dtype,zero", [("int8", 0), ("int8", -3), ("uint8", 128)])
def test_the_pool_on_codes_gives_the_float_pools_codes(dtype, zero):
    g = _pooled(dtype, zero=zero)
    prepared = prepare_graph(g, "llvm")
    pool = next(n for n in prepared.nodes if n.op == "max_pool2d")
    assert pool.inputs[0].op == "quantize_linear" and pool.dtype == dtype
    x = (np.random.default_rng(1).standard_normal((2, 4, 9, 9)) * 4).astype("float32")  # some saturate
    x[0, 0, :3, :3] = -1.0  # a window of ReLU's zeros alone: the lowest code a ReLU gives
    got = tefuse.build(g, "llvm").run(x=x)[0]
    np.testing.assert_array_equal(got, _numpy(np.maximum(x, 0), 0.05, zero, dtype))


@pytest.mark.parametrize("dtype,act", [("float8_e4m3fn", "relu"), ("float8_e5m2", "relu"),
                                       ("float8_e4m3fn", "clip")])
def test_a_pool_of_values_at_or_above_zero_on_float8_codes_gives_the_float_pools_codes(dtype, act):
    """Over a ReLU (or a clip at 0) the codes' byte order is their values': the pool runs on
    them, and the codes are those of the float pool's output quantized."""
    g = _pooled(dtype, act=act)
    prepared = prepare_graph(g, "llvm")
    pool = next(n for n in prepared.nodes if n.op == "max_pool2d")
    assert pool.inputs[0].op == "quantize_linear" and pool.dtype == "uint8"
    x = (np.random.default_rng(1).standard_normal((2, 4, 9, 9)) * 4).astype("float32")
    x[0, 0, :3, :3] = -1.0  # a window of the activation's zeros alone: code 0
    x[0, 1, :3, :3] = -0.0  # the activation passes -0.0, whose code 0x80 would top the window
    x[0, 1, 1, 1] = 1.0
    got = tefuse.build(g, "llvm").run(x=x)[0]
    assert got[0, 1, 0, 0] == 1.0  # its window: three -0.0 and the 1.0
    y = np.minimum(np.maximum(x, 0), 6.0) if act == "clip" else np.maximum(x, 0)
    pad = np.pad(y, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    pooled = np.lib.stride_tricks.sliding_window_view(pad, (3, 3), axis=(2, 3))[:, :, ::2, ::2].max(axis=(-1, -2))
    want = (pooled / np.float32(0.05)).astype(getattr(ml_dtypes, dtype)).astype(np.float32) * np.float32(0.05)
    np.testing.assert_array_equal(got, want)


def test_the_quantize_joins_the_kernel_that_makes_the_pools_input():
    """conv, ReLU and the codes in one kernel; the pool a kernel of its own reading one byte an
    element."""
    groups = fuse_graph(prepare_graph(_pooled(conv=True), "llvm"))
    (conv,) = [g for g in groups if g.anchor is not None and g.anchor.op == "conv2d"]
    assert conv.nodes[-1].op == "quantize_linear" and conv.outputs[0].dtype == "int8"
    (pool,) = [g for g in groups if any(n.op == "max_pool2d" for n in g.nodes)]
    (op,) = [n for n in pool.nodes if n.op == "max_pool2d"]
    assert op.inputs[0] in pool.inputs and op.inputs[0].dtype == "int8"


@pytest.mark.parametrize("case", ["float8", "float8 clip below zero", "float8 clip at -0.0", "two readers", "graph output", "graph input", "input read twice",
                                  "negative scale", "zero scale", "computed scale", "block", "per channel"])
def test_what_the_swap_leaves_alone(case):
    if case == "float8":
        g = _pooled("float8_e4m3fn", act="tanh")  # values below zero: codes not ordered as them
    elif case in ("float8 clip below zero", "float8 clip at -0.0"):  # -0.0: every negative input -0.0
        b = tefuse.GraphBuilder()
        lo = -1.0 if case == "float8 clip below zero" else -0.0
        p = b.max_pool2d(b.clip(b.input("x", (1, 2, 4, 4)), min=lo, max=1.0), kernel=(2, 2), strides=(2, 2))
        s, z = b.const(np.array(0.1, "float32")), b.const(np.array(0, "uint8"))
        g = b.build(b.quantize_linear(p, s, z, dtype="float8_e4m3fn"))
    elif case == "two readers":
        g = _pooled(readers=2)  # the float pool is read too
    elif case == "graph output":
        g = _pooled(pool_is_output=True)
    elif case == "graph input":  # the quantize would run in the pool's kernel, once a window tap
        g = _pooled(on_input=True)
    elif case == "input read twice":  # so would it where the pool's input is read in float too
        b = tefuse.GraphBuilder()
        r = b.relu(b.input("x", (1, 2, 4, 4)))
        p = b.max_pool2d(r, kernel=(2, 2), strides=(2, 2))
        s, z = b.const(np.array(0.1, "float32")), b.const(np.array(0, "int8"))
        g = b.build([b.quantize_linear(p, s, z, dtype="int8"), b.sigmoid(r)])
    elif case in ("negative scale", "zero scale"):  # a negative scale reverses the order
        g = _pooled(scale=-0.05 if case == "negative scale" else 0.0)
    elif case in ("computed scale", "block"):
        b = tefuse.GraphBuilder()
        x = b.input("x", (1, 4, 4, 4))
        p = b.max_pool2d(b.relu(x), kernel=(2, 2), strides=(2, 2))
        if case == "computed scale":
            s = b.relu(b.input("s", ()))
            z = b.const(np.array(0, "int8"))
            q = b.quantize_linear(p, s, z, dtype="int8")
        else:
            s, z = b.const(np.full((1, 2, 2, 2), 0.1, "float32")), b.const(np.zeros((1, 2, 2, 2), "int8"))
            q = b.quantize_linear(p, s, z, dtype="int8", axis=1, block_size=2)
        g = b.build(q)
    else:
        b = tefuse.GraphBuilder()
        x = b.input("x", (1, 2, 4, 4))
        p = b.max_pool2d(b.relu(x), kernel=(2, 2), strides=(2, 2))
        s, z = b.const(np.array([0.1, 0.2], "float32")), b.const(np.zeros(2, "int8"))
        g = b.build(b.dequantize_linear(b.quantize_linear(p, s, z, dtype="int8", axis=1), s, z, axis=1))
    assert quantize_before_max_pool(g) is g
