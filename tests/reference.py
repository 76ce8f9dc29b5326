"""numpy references for the ops (float64 math), used by the tests."""
from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def conv2d(x, w, strides=1, padding=0, dilation=1, groups=1, layout="NCHW"):
    s = (strides, strides) if isinstance(strides, int) else tuple(strides)
    d = (dilation, dilation) if isinstance(dilation, int) else tuple(dilation)
    p = padding
    if isinstance(p, int):
        p = (p, p, p, p)
    elif len(p) == 2:
        p = (p[0], p[1], p[0], p[1])
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    if layout == "NHWC":
        x = x.transpose(0, 3, 1, 2)
        w = w.transpose(3, 2, 0, 1)  # HWIO -> OIHW
    n, c, h, ww = x.shape
    k, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[2]), (p[1], p[3])))
    eh, ew = d[0] * (kh - 1) + 1, d[1] * (kw - 1) + 1
    win = sliding_window_view(xp, (eh, ew), axis=(2, 3))[:, :, ::s[0], ::s[1], ::d[0], ::d[1]]
    kg = k // groups
    outs = []
    for g in range(groups):
        xs = win[:, g * cg:(g + 1) * cg]
        ws = w[g * kg:(g + 1) * kg]
        outs.append(np.einsum("nchwij,kcij->nkhw", xs, ws))
    out = np.concatenate(outs, axis=1)
    return out.transpose(0, 2, 3, 1) if layout == "NHWC" else out


def batch_norm(x, gamma, beta, mean, var, eps=1e-5, axis=1):
    shape = [1] * x.ndim
    shape[axis] = -1
    r = lambda v: v.astype(np.float64).reshape(shape)  # noqa: E731
    return (x - r(mean)) / np.sqrt(r(var) + eps) * r(gamma) + r(beta)


def pool2d(x, kind, kernel, strides, padding, ceil_mode=False, count_include_pad=False, layout="NCHW",
           dilation=(1, 1)):
    """max/avg pooling; `padding` is (top, left, bottom, right); windows clipped as ONNX/PyTorch."""
    if layout == "NHWC":
        x = x.transpose(0, 3, 1, 2)
    kh, kw = kernel
    sh, sw = strides
    dh, dw = dilation
    t, l, b, r = padding
    n, c, h, w = x.shape

    def osz(size, k, s, d, p0, p1):
        span = size + p0 + p1 - (d * (k - 1) + 1)
        o = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (o - 1) * s >= size + p0:
            o -= 1
        return o

    oh, ow = osz(h, kh, sh, dh, t, b), osz(w, kw, sw, dw, l, r)
    out = np.zeros((n, c, oh, ow))
    xd = x.astype(np.float64)
    for i in range(oh):
        for j in range(ow):
            y0, x0 = i * sh - t, j * sw - l
            ys = [y0 + q * dh for q in range(kh)]
            xs = [x0 + q * dw for q in range(kw)]
            vy = [y for y in ys if 0 <= y < h]
            vx = [v for v in xs if 0 <= v < w]
            patch = xd[:, :, vy][:, :, :, vx]
            if kind == "max":
                out[:, :, i, j] = patch.max(axis=(2, 3)) if patch.size else -np.inf
            else:
                if count_include_pad:
                    cnt = len([y for y in ys if y < h + b]) * len([v for v in xs if v < w + r])
                else:
                    cnt = max(len(vy) * len(vx), 1)
                out[:, :, i, j] = patch.sum(axis=(2, 3)) / cnt
    return out.transpose(0, 2, 3, 1) if layout == "NHWC" else out


# -- activations and math (float64) ------------------------------------------------------
_erf = np.vectorize(math.erf, otypes=[np.float64])


def erf(x):
    return _erf(np.asarray(x, np.float64))


def sigmoid(x):
    x = np.asarray(x, np.float64)
    return np.exp(-np.logaddexp(0, -x))


def softplus(x):
    return np.logaddexp(0, np.asarray(x, np.float64))


def gelu(x, approximate="none"):
    x = np.asarray(x, np.float64)
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def hardsigmoid(x, alpha=1 / 6, beta=0.5):
    return np.clip(alpha * np.asarray(x, np.float64) + beta, 0, 1)


UNARY = {
    "relu": lambda x: np.maximum(x, 0),
    "relu6": lambda x: np.clip(x, 0, 6),
    "clip": lambda x, min=-np.inf, max=np.inf: np.clip(x, min, max),  # noqa: A002
    "leaky_relu": lambda x, alpha=0.01: np.where(x > 0, x, alpha * x),
    "sigmoid": sigmoid,
    "tanh": np.tanh,
    "gelu": gelu,
    "silu": lambda x: x * sigmoid(x),
    "hardswish": lambda x: x * hardsigmoid(x),
    "hardsigmoid": hardsigmoid,
    "elu": lambda x, alpha=1.0: np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0))),
    "softplus": softplus,
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "erf": erf,
    "abs": np.abs,
    "neg": np.negative,
    "reciprocal": lambda x: 1 / x,
    "square": np.square,
    "floor": np.floor,
    "ceil": np.ceil,
    "round": np.round,
    "identity": lambda x: x,
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
    "sinh": np.sinh, "cosh": np.cosh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
    "sign": np.sign,
    "mish": lambda x: x * np.tanh(softplus(x)),
    "softsign": lambda x: x / (1 + np.abs(x)),
    "thresholded_relu": lambda x, alpha=1.0: np.where(x > alpha, x, 0),
    "celu": lambda x, alpha=1.0: np.maximum(x, 0) + np.minimum(0, alpha * np.expm1(np.asarray(x, np.float64) / alpha)),
    "shrink": lambda x, bias=0.0, lambd=0.5: np.where(x < -lambd, x + bias, np.where(x > lambd, x - bias, 0)),
}


def lrn(x, size=5, alpha=1e-4, beta=0.75, bias=1.0, axis=1):
    x = np.moveaxis(np.asarray(x, np.float64), axis, 1)
    c = x.shape[1]
    sq = np.zeros_like(x)
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    for k in range(c):
        sq[:, k] = (x[:, max(0, k - lo):min(c, k + hi + 1)] ** 2).sum(axis=1)
    return np.moveaxis(x / (bias + alpha / size * sq) ** beta, 1, axis)


def softmax(x, axis=-1):
    x = np.asarray(x, np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x, axis=-1):
    x = np.asarray(x, np.float64)
    z = x - x.max(axis=axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


def layer_norm(x, scale, bias, eps=1e-5):
    """LayerNorm over the last axis (biased variance, as ONNX's)."""
    x = np.asarray(x, np.float64)
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * scale + bias


def group_norm(x, groups, scale, bias, eps=1e-5):
    """GroupNorm of x [N, C, ...] with per-channel scale and bias, in x's shape."""
    x = np.asarray(x, np.float64)
    n, c = x.shape[:2]
    r = x.reshape(n, groups, -1)
    mean = r.mean(axis=-1, keepdims=True)
    var = ((r - mean) ** 2).mean(axis=-1, keepdims=True)
    y = ((r - mean) / np.sqrt(var + eps)).reshape(x.shape)
    shape = (1, c) + (1,) * (x.ndim - 2)
    return y * np.reshape(scale, shape) + np.reshape(bias, shape)


# -- test helpers ---------------------------------------------------------------------------
TOL = {
    "float64": dict(rtol=1e-10, atol=1e-10),
    "float32": dict(rtol=1e-5, atol=1e-5),
    "float16": dict(rtol=1e-2, atol=1e-2),
}


def assert_close(actual, expected, dtype=None, rtol=None, atol=None, what=""):
    """Compare with a float64 reference; tolerances from `TOL[dtype]` unless given."""
    actual = np.asarray(actual)
    dtype = str(dtype or actual.dtype)
    tol = dict(TOL.get(dtype, dict(rtol=0, atol=0)))
    if rtol is not None:
        tol["rtol"] = rtol
    if atol is not None:
        tol["atol"] = atol
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != reference {expected.shape}"
    if str(actual.dtype) != dtype:
        raise AssertionError(f"{what}: dtype {actual.dtype}, expected {dtype}")
    a64, e64 = actual.astype(np.float64), expected.astype(np.float64)
    err = np.abs(a64 - e64)
    np.testing.assert_allclose(a64, e64, err_msg=f"{what} max abs err {np.nanmax(err) if err.size else 0:.3g}",
                               equal_nan=True, **tol)
    return float(np.nanmax(err)) if err.size else 0.0


class Const:
    """Marks an array that `run_op` passes as a graph constant instead of an input."""

    def __init__(self, value, dtype=None):
        self.value = np.asarray(value, dtype=dtype) if dtype else np.asarray(value)


def build_op(op, *args, target="llvm", **attrs):
    """A one-op graph: np arrays become inputs x0, x1..., `Const`s constants. -> (graph, inputs)."""
    import tefuse

    b = tefuse.GraphBuilder()
    nodes, feeds = [], []
    for k, a in enumerate(args):
        if isinstance(a, Const):
            nodes.append(b.const(a.value, dtype=str(a.value.dtype), name=f"c{k}"))
        else:
            a = np.asarray(a)
            nodes.append(b.input(f"x{k}", a.shape, str(a.dtype)))
            feeds.append(a)
    out = b.op(op, *nodes, **attrs)
    return b.build(out), feeds


def run_op(op, *args, target="llvm", **attrs):
    """Build and run a one-op graph on `target`; returns the output as numpy."""
    import tefuse

    g, feeds = build_op(op, *args, **attrs)
    return tefuse.build(g, target).run(*feeds)[0]

