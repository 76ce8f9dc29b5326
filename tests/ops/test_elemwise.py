"""Activations, unary math, binary broadcasting, cast, where, sum_n on llvm vs numpy."""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse.codegen.ptx import cuda_kernel_names
from tests.reference import UNARY, Const, assert_close, build_op, run_op

SHAPE = (2, 3, 5)

ACT_CASES = [
    ("relu", {}), ("relu6", {}), ("clip", {"min": -0.5, "max": 1.5}), ("clip", {"min": 0.0}),
    ("leaky_relu", {}), ("leaky_relu", {"alpha": 0.2}), ("sigmoid", {}), ("tanh", {}),
    ("gelu", {}), ("gelu", {"approximate": "tanh"}), ("silu", {}), ("hardswish", {}),
    ("hardsigmoid", {}), ("hardsigmoid", {"alpha": 0.2, "beta": 0.5}), ("elu", {}),
    ("elu", {"alpha": 0.5}), ("softplus", {}), ("identity", {}),
]


def _inputs(rng, dtype, scale=4.0):
    x = (rng.standard_normal(SHAPE) * scale).astype(dtype)
    x.flat[:6] = [-7.0, -3.0, -0.0, 3.0, 6.5, 0.25]  # around the kinks of relu6/hardswish
    return x


@pytest.mark.parametrize("op,attrs", ACT_CASES, ids=[f"{o}{'_' + '_'.join(map(str, a.values())) if a else ''}"
                                                    for o, a in ACT_CASES])
def test_activation_float32(rng, op, attrs):
    x = _inputs(rng, "float32")
    assert_close(run_op(op, x, **attrs), UNARY[op](x.astype(np.float64), **attrs), "float32",
                 rtol=2e-5, atol=2e-6, what=op)


@pytest.mark.parametrize("op", ["relu", "sigmoid", "tanh", "gelu", "silu", "hardswish", "elu", "softplus"])
def test_activation_float16(rng, op):
    x = _inputs(rng, "float16", scale=2.0)
    y = run_op(op, x)
    assert y.dtype == np.float16
    assert_close(y, UNARY[op](x.astype(np.float64)), "float16", what=op)


@pytest.mark.parametrize("op", ["sigmoid", "tanh", "softplus", "silu", "gelu", "elu", "exp"])
def test_activation_extremes_finite(op):
    """Large magnitudes: no overflow to inf/nan where the true result is finite."""
    x = np.array([-100.0, -30.0, -1.0, 0.0, 1.0, 30.0, 80.0, 100.0], "float32")
    ref = UNARY[op](x.astype(np.float64))
    with np.errstate(over="ignore"):
        finite = np.isfinite(ref.astype(np.float32))
    y = run_op(op, x)
    assert np.isfinite(y[finite]).all(), f"{op}: {y} (reference {ref})"
    assert_close(y[finite], ref[finite], "float32", rtol=1e-5, atol=1e-6, what=op)


UNARY_MATH = [
    ("exp", lambda r: r.standard_normal(SHAPE) * 3),
    ("log", lambda r: r.uniform(0.01, 10, SHAPE)),
    ("sqrt", lambda r: r.uniform(0, 10, SHAPE)),
    ("rsqrt", lambda r: r.uniform(0.01, 10, SHAPE)),
    ("erf", lambda r: r.standard_normal(SHAPE) * 2),
    ("abs", lambda r: r.standard_normal(SHAPE)),
    ("neg", lambda r: r.standard_normal(SHAPE)),
    ("reciprocal", lambda r: r.uniform(0.1, 5, SHAPE) * r.choice([-1, 1], SHAPE)),
    ("square", lambda r: r.standard_normal(SHAPE)),
    ("floor", lambda r: r.standard_normal(SHAPE) * 3),
    ("ceil", lambda r: r.standard_normal(SHAPE) * 3),
    ("round", lambda r: np.concatenate([np.array([0.5, 1.5, 2.5, -0.5, -1.5]),
                                        r.standard_normal(25) * 3]).reshape(SHAPE)),
]


@pytest.mark.parametrize("op,gen", UNARY_MATH, ids=[u[0] for u in UNARY_MATH])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_unary_math(rng, op, gen, dtype):
    x = gen(rng).astype(dtype)
    assert_close(run_op(op, x), UNARY[op](x.astype(np.float64)), dtype,
                 rtol=2e-5 if dtype == "float32" else 1e-9, atol=1e-6 if dtype == "float32" else 1e-12,
                 what=op)


BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
    "maximum": np.maximum, "minimum": np.minimum, "pow": np.power,
}
BCAST = [
    ((2, 3, 4), (2, 3, 4)),
    ((2, 3, 4), (4,)),
    ((2, 1, 4), (3, 1)),
    ((1,), (2, 3)),
    ((3, 1, 5), (1, 4, 1)),
    ((1, 3), (2, 1, 1)),
]


@pytest.mark.parametrize("op", list(BINARY))
@pytest.mark.parametrize("sa,sb", BCAST, ids=[f"{a}x{b}" for a, b in BCAST])
def test_binary_broadcast(rng, op, sa, sb):
    a = rng.uniform(0.5, 2.0, sa).astype("float32")
    b = (rng.uniform(0.5, 2.0, sb) * (rng.choice([-1, 1], sb) if op != "pow" else 1)).astype("float32")
    assert_close(run_op(op, a, b), BINARY[op](a.astype(np.float64), b.astype(np.float64)),
                 rtol=2e-5, atol=1e-6, what=op)


@pytest.mark.parametrize("op", ["add", "div"])
def test_binary_scalar_input(rng, op):
    a = rng.uniform(0.5, 2.0, (2, 3)).astype("float32")
    b = np.array(1.5, "float32")
    assert_close(run_op(op, a, b), BINARY[op](a.astype(np.float64), 1.5))


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "maximum", "pow"])
@pytest.mark.parametrize("const_first", [False, True])
@pytest.mark.parametrize("cshape", [(), (1,), (1, 1)])
def test_binary_scalar_constant(rng, op, const_first, cshape):
    a = rng.uniform(0.5, 2.0, (3, 4)).astype("float32")
    c = np.full(cshape, 1.75, "float32")
    args = (Const(c), a) if const_first else (a, Const(c))
    ref = BINARY[op](*(c.astype(np.float64), a) if const_first else (a, c.astype(np.float64)))
    assert_close(run_op(op, *args), ref, rtol=2e-5, atol=1e-6, what=op)


def test_binary_vector_constant(rng):
    a = rng.standard_normal((2, 3, 4)).astype("float32")
    c = rng.standard_normal((3, 1)).astype("float32")
    assert_close(run_op("mul", a, Const(c)), a.astype(np.float64) * c)


@pytest.mark.parametrize("op", ["add", "mul", "maximum"])
def test_binary_float16(rng, op):
    a = rng.standard_normal((4, 5)).astype("float16")
    b = rng.standard_normal((5,)).astype("float16")
    y = run_op(op, a, b)
    assert y.dtype == np.float16
    assert_close(y, BINARY[op](a.astype(np.float64), b.astype(np.float64)), "float16")


@pytest.mark.parametrize("op", ["add", "sub", "mul", "maximum", "minimum"])
def test_binary_int32(rng, op):
    a = rng.integers(-50, 50, (3, 4)).astype("int32")
    b = rng.integers(-50, 50, (4,)).astype("int32")
    y = run_op(op, a, b)
    np.testing.assert_array_equal(y, BINARY[op](a, b))


def test_binary_dtype_mismatch_is_refused():
    with pytest.raises(tefuse.GraphError, match="dtype"):
        run_op("add", np.zeros(3, "float32"), np.zeros(3, "float16"))


def test_binary_shapes_that_do_not_broadcast():
    with pytest.raises(tefuse.GraphError, match="broadcast"):
        run_op("add", np.zeros((2, 3), "float32"), np.zeros((4,), "float32"))


CASTS = [("float32", "float16"), ("float16", "float32"), ("float32", "int32"), ("int32", "float32"),
         ("float32", "float64"), ("float64", "float32"), ("int32", "int8"), ("float32", "bool"),
         ("bool", "float32")]


@pytest.mark.parametrize("src,dst", CASTS, ids=[f"{a}->{b}" for a, b in CASTS])
def test_cast(rng, src, dst):
    x = (rng.standard_normal((3, 7)) * 50)
    x[0, :4] = [0.0, -0.7, 2.5, -2.5]
    x = x.astype(src)
    y = run_op("cast", x, dtype=dst)
    assert y.dtype == np.dtype(dst)
    ref = x.astype(dst) if src not in ("float32", "float64") or dst not in ("int32", "int8") \
        else np.trunc(x).astype(dst)
    if dst == "float16":
        assert_close(y, ref, "float16", rtol=1e-3, atol=0)
    else:
        np.testing.assert_array_equal(y, ref)


@pytest.mark.parametrize("cdtype", ["bool", "float32", "int32"])
@pytest.mark.parametrize("shapes", [((2, 3), (2, 3), (2, 3)), ((2, 1), (3,), (2, 3)), ((3,), (2, 3), (1,)),
                                    ((3,), (2, 3), ())],
                         ids=["same", "bcast", "vec_b", "scalar_b"])
def test_where(rng, cdtype, shapes):
    sc, sa, sb = shapes
    c = (rng.standard_normal(sc) > 0).astype(cdtype)
    a = rng.standard_normal(sa).astype("float32")
    b = rng.standard_normal(sb).astype("float32")
    assert_close(run_op("where", c, a, b), np.where(c, a, b), "float32", rtol=0, atol=0)


def test_where_scalar_constant_branch(rng):
    c = rng.standard_normal((2, 3)) > 0
    a = rng.standard_normal((2, 3)).astype("float32")
    assert_close(run_op("where", c, a, Const(np.float32(0.5))), np.where(c, a, 0.5), rtol=0, atol=0)


def test_where_dtype_mismatch_is_refused():
    with pytest.raises(tefuse.GraphError):
        run_op("where", np.ones(3, bool), np.zeros(3, "float32"), np.zeros(3, "float16"))


def test_sum_n(rng):
    a, b, c = (rng.standard_normal(s).astype("float32") for s in [(2, 3), (3,), (2, 1)])
    assert_close(run_op("sum_n", a, b, c), a.astype(np.float64) + b + c)


def test_sum_n_dtype_mismatch_is_refused():
    with pytest.raises(tefuse.GraphError, match="dtype"):
        run_op("sum_n", np.zeros(3, "float32"), np.zeros(3, "float16"))


def test_unary_rejects_int():
    with pytest.raises(tefuse.GraphError, match="float"):
        run_op("sigmoid", np.zeros(3, "int32"))


# -- trigonometric, hyperbolic and the newer activations ----------------------------------------
def _within(lo, hi):
    return lambda r: r.uniform(lo, hi, SHAPE)


MATH_CASES = [
    ("sin", _within(-10, 10), {}), ("cos", _within(-10, 10), {}), ("tan", _within(-1.4, 1.4), {}),
    ("asin", _within(-1, 1), {}), ("acos", _within(-1, 1), {}), ("atan", _within(-20, 20), {}),
    ("sinh", _within(-5, 5), {}), ("cosh", _within(-5, 5), {}), ("asinh", _within(-50, 50), {}),
    ("acosh", _within(1, 50), {}), ("atanh", _within(-0.99, 0.99), {}),
    ("mish", _within(-8, 8), {}), ("softsign", _within(-8, 8), {}),
    ("thresholded_relu", _within(-3, 3), {}), ("thresholded_relu", _within(-3, 3), {"alpha": 0.5}),
    ("celu", _within(-5, 5), {}), ("celu", _within(-5, 5), {"alpha": 2.0}),
    ("shrink", _within(-2, 2), {}), ("shrink", _within(-2, 2), {"bias": 1.5, "lambd": 1.0}),
]


@pytest.mark.parametrize("op,gen,attrs", MATH_CASES,
                         ids=[f"{o}{'_' + '_'.join(map(str, a.values())) if a else ''}" for o, _, a in MATH_CASES])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_math_unary(rng, op, gen, attrs, dtype):
    """float16 computes transcendental rules in float32: within fp16's rounding of the result."""
    x = gen(rng).astype(dtype)
    y = run_op(op, x, **attrs)
    assert y.dtype == np.dtype(dtype)
    tol = dict(rtol=2e-5, atol=2e-6) if dtype == "float32" else dict(rtol=2e-3, atol=2e-3)
    assert_close(y, UNARY[op](x.astype(np.float64), **attrs), dtype, what=op, **tol)


def test_math_unary_outside_the_domain_is_nan_as_numpy():
    x = np.array([-2.0, 2.0, 0.5], "float32")
    with np.errstate(invalid="ignore"):
        for op in ("asin", "acos", "acosh", "atanh"):
            np.testing.assert_array_equal(np.isnan(run_op(op, x)), np.isnan(UNARY[op](x.astype(np.float64))), op)


@pytest.mark.parametrize("dtype", ["float32", "int32", "int8", "uint8"])
def test_sign(dtype):
    x = np.array([3, 0, 1, 7, 2], dtype) if dtype == "uint8" else np.array([-3, 0, 1, -7, 2], dtype)
    np.testing.assert_array_equal(run_op("sign", x), np.sign(x))


def test_sign_of_nan_and_signed_zeros():
    y = run_op("sign", np.array([np.nan, -0.0, 0.0, -np.inf], "float32"))
    np.testing.assert_array_equal(y, [np.nan, 0.0, 0.0, -1.0])
    assert not np.signbit(y[1]), "numpy's sign(-0.0) is +0.0"


def test_shrink_on_integers_truncates_as_onnx_reference():
    x = np.array([-5, -1, 0, 1, 5], "int32")
    y = run_op("shrink", x, bias=1.5, lambd=0.5)
    np.testing.assert_array_equal(y, np.array([-3.5, 0.5, 0, -0.5, 3.5]).astype("int32"))


@pytest.mark.parametrize("attrs,want", [({}, [0, 1, 1, 0]), ({"detect_negative": False}, [0, 1, 0, 0]),
                                        ({"detect_positive": False}, [0, 0, 1, 0]),
                                        ({"detect_positive": False, "detect_negative": False}, [0, 0, 0, 0])])
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_isinf(dtype, attrs, want):
    y = run_op("isinf", np.array([1.0, np.inf, -np.inf, np.nan], dtype), **attrs)
    assert y.dtype == np.bool_
    np.testing.assert_array_equal(y, np.array(want, bool))


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_isnan(dtype):
    y = run_op("isnan", np.array([1.0, np.inf, np.nan, -0.0], dtype))
    np.testing.assert_array_equal(y, [False, False, True, False])


@pytest.mark.parametrize("op", ["isnan", "isinf", "sin", "mish"])
def test_float_only_math_refuses_integers(op):
    with pytest.raises(tefuse.GraphError, match=f"{op}: expects a float tensor, got int32"):
        run_op(op, np.zeros(3, "int32"))


# -- Mod and BitShift ------------------------------------------------------------------------
MOD_A = [-4.3, 7.2, 5.0, 4.3, -7.2, 8.0, 0.0, -0.0, 0.0, -0.0, -3.0, 3.0, np.inf, 1.0, np.nan, 1.0]
MOD_B = [2.1, -3.4, 8.0, -2.1, 3.4, 5.0, -2.0, 2.0, 2.0, -2.0, np.inf, -np.inf, 2.0, 0.0, 2.0, np.nan, 7.0]
BIG = {"float16": 6e4, "float32": 1e30, "float64": 1e300}  # a quotient past the mantissa's reach


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_float_mod_is_numpys_bit_for_bit(dtype, fmod):
    """fmod=0 is numpy.mod (the divisor's sign), fmod=1 numpy.fmod (the dividend's), exactly:
    signed zeros, infinities, NaN and a quotient past 2^24 included."""
    a, b = np.array(MOD_A + [BIG[dtype]], dtype), np.array(MOD_B, dtype)
    with np.errstate(all="ignore"):
        want = (np.fmod if fmod else np.mod)(a, b)
    y = run_op("mod", a, b, fmod=fmod)
    np.testing.assert_array_equal(y, want)
    np.testing.assert_array_equal(np.signbit(y), np.signbit(want))


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8"])
def test_integer_mod_never_traps(dtype, fmod):
    """x % 0 and INT_MIN % -1 trap in C; numpy gives 0 for both."""
    info = np.iinfo(dtype)
    if info.min < 0:
        a = np.array([-4, 7, 5, 4, -7, 8, 3, info.min, info.min, 9], dtype)
        b = np.array([2, -3, 8, -2, 3, 5, 0, -1, 3, -4], dtype)
    else:
        a, b = np.array([4, 7, 5, 255, 0], dtype), np.array([3, 0, 8, 7, 3], dtype)
    with np.errstate(all="ignore"):
        want = (np.fmod if fmod else np.mod)(a, b)
    np.testing.assert_array_equal(run_op("mod", a, b, fmod=fmod), want)


def test_mod_broadcasts(rng):
    a = rng.integers(-20, 20, (2, 3, 4)).astype("int32")
    b = np.array([3, -5, 7, -2], "int32")
    np.testing.assert_array_equal(run_op("mod", a, b), np.mod(a, b))


def _shift_reference(a, b, direction):
    """onnx.reference's BitShift: out-of-range shifts give 0 (-1 for a right shift of a negative)."""
    bits = np.iinfo(a.dtype).bits
    out = []
    for x, s in zip(a.tolist(), b.tolist()):
        if not 0 <= s < bits:
            out.append(-1 if direction == "right" and x < 0 else 0)
        elif direction == "right":
            out.append(x >> s)
        else:
            v = (x << s) & ((1 << bits) - 1)
            out.append(v - (1 << bits) if np.iinfo(a.dtype).min < 0 and v >= 1 << (bits - 1) else v)
    return np.array(out, a.dtype)


@pytest.mark.parametrize("direction", ["left", "right"])
@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "uint32"])
def test_bitshift(dtype, direction):
    bits = np.iinfo(dtype).bits
    if np.iinfo(dtype).min < 0:
        a = np.array([1, -8, 127, -128, 5, -1, 3, -3], dtype)
        b = np.array([1, 2, bits - 1, 1, bits, -1, bits + 3, 0], dtype)
    else:
        a = np.array([1, 8, 255, 128, 5, 3], dtype)
        b = np.array([1, 2, bits - 1, 1, bits, 0], dtype)
    np.testing.assert_array_equal(run_op("bitshift", a, b, direction=direction), _shift_reference(a, b, direction))


def test_bitshift_refuses_floats_and_unknown_directions():
    with pytest.raises(tefuse.GraphError, match="bitshift: expects integer tensors, got float32"):
        run_op("bitshift", np.zeros(3, "float32"), np.zeros(3, "float32"))
    with pytest.raises(tefuse.GraphError, match="direction must be 'left' or 'right'"):
        run_op("bitshift", np.zeros(3, "int32"), np.zeros(3, "int32"), direction="up")


@pytest.mark.parametrize("op,dtype", [("sin", "float32"), ("mish", "float16"), ("mod", "float16"), ("mod", "int32"),
                                      ("bitshift", "int8"), ("isinf", "float16"), ("sign", "int32")])
def test_math_builds_for_cuda(op, dtype):
    """Compile only (no GPU needed): the rules lower through CUDA's intrinsics too."""
    b = tefuse.GraphBuilder()
    xs = [b.input(f"x{k}", (4, 64), dtype) for k in range(2 if op in ("mod", "bitshift") else 1)]
    cg = tefuse.build(b.build(b.op(op, *xs)), "cuda")
    (k,) = cg.kernels
    assert len(cuda_kernel_names(k.source("cuda"))) == 1


POW_BASES = [-2.0, -1.5, 0.0, 1.5, 3.0, -4.0, 0.75, np.inf, -np.inf, np.nan]


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("e", [3.0, 2.0, -2.0, -3.0, 0.0, 1.0, 5.0, 2.5, 1.0 / 3])
def test_pow_of_a_negative_base_is_numpys(dtype, e):
    """An integral exponent keeps a negative base's sign, any other gives NaN (pow lowered through
    exp(e * log(x)), as CUDA's fast math does, gives NaN for every negative base)."""
    a = np.array(POW_BASES, dtype)
    with np.errstate(all="ignore"):
        want = np.power(a, np.array(e, dtype))
    got = run_op("pow", a, Const(np.array(e, dtype)))
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2e-3, equal_nan=True)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_pow_with_a_runtime_exponent_is_numpys(dtype):
    a = np.array(POW_BASES * 2, dtype)
    b = np.array([3.0, 2.0, -2.0, 0.0, 1.0, 0.5, 2.5, -3.0, 5.0, 0.0,
                  0.0, -1.0, 4.0, 3.0, 7.0, 1.0, 1.0, 2.0, 3.0, 2.5], dtype)
    with np.errstate(all="ignore"):
        want = np.power(a, b)
    np.testing.assert_allclose(run_op("pow", a, b).astype(np.float64), want.astype(np.float64), rtol=2e-3,
                               equal_nan=True)


def test_pow_by_a_small_integer_is_multiplications_on_cuda():
    """GELU's x ** 3 and RMSNorm's x ** 2 call no pow (exact, and no NaN for x < 0)."""
    g, _ = build_op("pow", np.zeros((4, 64), "float32"), Const(np.array(3.0, "float32")))
    (k,) = tefuse.build(g, "cuda").kernels
    src = k.source("cuda")
    assert "pow" not in src.split("main_kernel", 1)[1].replace("out_pow", "")


def _ulps(got, want):
    """Units in the last place between same-typed 16-bit floats (both finite, one sign)."""
    g, w = got.view(np.int16).astype(np.int64), want.view(np.int16).astype(np.int64)
    return np.abs(np.where(g < 0, -(g & 0x7FFF), g) - np.where(w < 0, -(w & 0x7FFF), w))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("c", [1.4140625, 3.0, 0.1, -7.0, 60000.0, 6.1e-5, 1e-7])
def test_a_16_bit_float_divided_by_a_constant_is_within_one_unit_of_the_quotient_over_every_value(dtype, c):
    """The division by a constant is a float32 multiplication by its reciprocal (elemwise._div):
    over every finite value of the type, the quotient correctly rounded or one unit off."""
    import ml_dtypes

    np_dt = np.float16 if dtype == "float16" else ml_dtypes.bfloat16
    x = np.arange(-(1 << 15), 1 << 15, dtype=np.int64).astype(np.uint16).view(np_dt)
    x = x[np.isfinite(x.astype(np.float32))]
    cc = np.asarray(c, dtype=np_dt)
    got = run_op("div", x, Const(cc))
    with np.errstate(over="ignore"):  # quotients past float32's range are its infinities, as the kernel's
        want = (x.astype(np.float64) / float(cc)).astype(np.float32).astype(np_dt)
    finite = np.isfinite(want.astype(np.float32)) & (want.astype(np.float32) != 0)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.isinf(got.astype(np.float32)), np.isinf(want.astype(np.float32)))
    ulps = _ulps(got[finite], want[finite])
    assert ulps.max() <= 1 and (ulps == 0).mean() > 0.99, (ulps.max(), (ulps == 0).mean())


def test_the_division_of_a_16_bit_float_by_a_constant_is_a_multiplication():
    from tvm import tirx as tir

    from tefuse.ops.elemwise import BINARY

    x = tir.Var("x", "float16")
    assert "/" not in str(BINARY["div"](x, tir.const(1.5, "float16")))
    assert "/" in str(BINARY["div"](x, tir.Var("y", "float16")))  # a run-time divisor is divided by
    assert "/" in str(BINARY["div"](tir.Var("z", "float32"), tir.const(1.5, "float32")))  # float32 as written


def test_a_half_round_compiles_for_cuda_and_rounds_half_to_even():
    """Round on float16 computes in float32 (exact for a half): CUDA has no half nearbyint, whose
    call (`hnearbyint`) nvcc refused."""
    from tefuse import GraphBuilder
    from tefuse.codegen.ptx import compile_to_ptx

    b = GraphBuilder()
    g = b.build(b.round(b.input("x", (4, 64), "float16")))
    compile_to_ptx(tefuse.build(g, "cuda:sm_90", cache=None).kernels[0].source("cuda"), "sm_90a")
    v = (np.arange(256).reshape(4, 64) / 4 - 30).astype(np.float16)  # every quarter: .5s both ways
    np.testing.assert_array_equal(tefuse.build(g, "llvm", cache=None).run(x=v)[0], np.rint(v))
