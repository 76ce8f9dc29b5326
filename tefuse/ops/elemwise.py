"""Elementwise ops: activations, unary math, binary arithmetic with numpy broadcasting.

Each is a scalar rule on TIR expressions; the registered compute lifts it to a lazy value so
chains of them compose into one expression.
"""
from __future__ import annotations

import math
from typing import Callable, Optional, Sequence

from tvm.ir.expr import Expr as PrimExpr
from tvm import tirx as tir

from ..errors import OpError
from .nanprop import clip_with, fmax, fmin, max_with
from .registry import OpPattern, register_op
from .value import Value, bind, bind_all, broadcast_shape, broadcast_to, expr_dtype as _dt, lazy

Scalar = Callable[..., PrimExpr]


def _c(v: float, dtype: str) -> PrimExpr:
    return tir.const(v, dtype)


def _in_f32(rule: Scalar) -> Scalar:
    """Run a transcendental rule in float32 for half inputs (accuracy and intrinsic support)."""

    def wrapped(x, **attrs):
        if _dt(x) == "float16":
            return tir.Cast("float16", rule(tir.Cast("float32", x), **attrs))
        return rule(x, **attrs)

    return wrapped


def _in_f64_for_int(rule: Scalar) -> Scalar:
    """Run a rule with float parameters on an integer input in float64, the result cast back
    (truncated), as onnx.reference computes Shrink on integers."""

    def wrapped(x, **attrs):
        d = _dt(x)
        if d.startswith(("int", "uint")):
            return tir.Cast(d, rule(tir.Cast("float64", x), **attrs))
        return rule(x, **attrs)

    return wrapped


def _gelu(x, approximate="none"):
    d = _dt(x)
    if approximate == "tanh":
        inner = _c(math.sqrt(2 / math.pi), d) * (x + _c(0.044715, d) * x * x * x)
        return _c(0.5, d) * x * (_c(1.0, d) + tir.tanh(inner))
    return _c(0.5, d) * x * (_c(1.0, d) + tir.erf(x * _c(1 / math.sqrt(2), d)))


def _elu(x, alpha=1.0):
    d = _dt(x)
    return tir.Select(x > _c(0, d), x, _c(alpha, d) * (tir.exp(x) - _c(1, d)))


def _hardsigmoid(x, alpha=1 / 6, beta=0.5):
    d = _dt(x)
    return clip_with(_c(alpha, d) * x + _c(beta, d), 0.0, 1.0, d)


def _hardswish(x):
    return x * _hardsigmoid(x)


def _clip(x, min=-math.inf, max=math.inf):  # noqa: A002 - ONNX/numpy names
    # min(max(x, lo), hi) as numpy and ONNX: NaN stays NaN, min > max gives max, an infinite
    # bound is no bound (an input of -inf stays -inf)
    return clip_with(x, min, max, _dt(x))


def _leaky_relu(x, alpha=0.01):
    return tir.Select(x > _c(0, _dt(x)), x, _c(alpha, _dt(x)) * x)


def _softplus(x):
    # log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)): no overflow for large x
    d = _dt(x)
    return max_with(x, _c(0, d)) + tir.log1p(tir.exp(_c(0, d) - tir.abs(x)))


def _sign(x):
    """-1, 0 or 1; NaN stays NaN and both zeros give +0 (numpy)."""
    d = _dt(x)
    one, zero = _c(1, d), _c(0, d)
    if d.startswith("uint"):
        return tir.Select(x > zero, one, zero)
    rest = tir.Select(x == zero, zero, x) if d.startswith(("float", "bfloat")) else zero
    return tir.Select(x > zero, one, tir.Select(x < zero, _c(-1, d), rest))


def _celu(x, alpha=1.0):
    # max(0, x) + min(0, alpha * (exp(x / alpha) - 1)): one of the two terms is 0 either side of 0
    d = _dt(x)
    return tir.Select(x > _c(0, d), x, _c(alpha, d) * (tir.exp(x / _c(alpha, d)) - _c(1, d)))


def _shrink(x, bias=0.0, lambd=0.5):
    d = _dt(x)
    return tir.Select(x < _c(-lambd, d), x + _c(bias, d),
                      tir.Select(x > _c(lambd, d), x - _c(bias, d), _c(0, d)))


# name -> (scalar rule, attribute defaults); activations are the ones FusionPlan accepts
UNARY: dict[str, tuple[Scalar, dict]] = {
    "relu": (lambda x: max_with(x, _c(0, _dt(x))), {}),
    "relu6": (lambda x: clip_with(x, 0.0, 6.0, _dt(x)), {}),
    "clip": (_clip, {"min": -math.inf, "max": math.inf}),
    "leaky_relu": (_leaky_relu, {"alpha": 0.01}),
    "sigmoid": (_in_f32(lambda x: tir.sigmoid(x)), {}),
    "tanh": (_in_f32(lambda x: tir.tanh(x)), {}),
    "gelu": (_in_f32(_gelu), {"approximate": "none"}),
    "silu": (_in_f32(lambda x: x * tir.sigmoid(x)), {}),
    "hardswish": (_hardswish, {}),
    "hardsigmoid": (_hardsigmoid, {"alpha": 1 / 6, "beta": 0.5}),
    "elu": (_in_f32(_elu), {"alpha": 1.0}),
    "softplus": (_in_f32(_softplus), {}),
    "exp": (_in_f32(lambda x: tir.exp(x)), {}),
    "log": (_in_f32(lambda x: tir.log(x)), {}),
    "sqrt": (_in_f32(lambda x: tir.sqrt(x)), {}),
    "rsqrt": (_in_f32(lambda x: tir.rsqrt(x)), {}),
    "erf": (_in_f32(lambda x: tir.erf(x)), {}),
    "abs": (lambda x: tir.abs(x), {}),
    "neg": (lambda x: _c(0, _dt(x)) - x, {}),
    "reciprocal": (lambda x: _c(1, _dt(x)) / x, {}),
    "square": (lambda x: x * x, {}),
    "floor": (lambda x: tir.floor(x), {}),
    "ceil": (lambda x: tir.ceil(x), {}),
    # half to even; a half's rounded in float32, exactly (CUDA has no half nearbyint)
    "round": (_in_f32(lambda x: tir.nearbyint(x)), {}),
    "identity": (lambda x: x, {}),
    "sin": (_in_f32(lambda x: tir.sin(x)), {}),
    "cos": (_in_f32(lambda x: tir.cos(x)), {}),
    "tan": (_in_f32(lambda x: tir.tan(x)), {}),
    "asin": (_in_f32(lambda x: tir.asin(x)), {}),
    "acos": (_in_f32(lambda x: tir.acos(x)), {}),
    "atan": (_in_f32(lambda x: tir.atan(x)), {}),
    "sinh": (_in_f32(lambda x: tir.sinh(x)), {}),
    "cosh": (_in_f32(lambda x: tir.cosh(x)), {}),
    "asinh": (_in_f32(lambda x: tir.asinh(x)), {}),
    "acosh": (_in_f32(lambda x: tir.acosh(x)), {}),
    "atanh": (_in_f32(lambda x: tir.atanh(x)), {}),
    "sign": (_sign, {}),
    "mish": (_in_f32(lambda x: x * tir.tanh(_softplus(x))), {}),
    "softsign": (lambda x: x / (_c(1, _dt(x)) + tir.abs(x)), {}),
    "thresholded_relu": (lambda x, alpha=1.0: tir.Select(x > _c(alpha, _dt(x)), x, _c(0, _dt(x))), {"alpha": 1.0}),
    "celu": (_in_f32(_celu), {"alpha": 1.0}),
    "shrink": (_in_f64_for_int(_shrink), {"bias": 0.0, "lambd": 0.5}),
}

ACTIVATIONS = ("relu", "relu6", "clip", "leaky_relu", "sigmoid", "tanh", "gelu", "silu",
               "hardswish", "hardsigmoid", "elu", "softplus", "identity")

def _is_int(e) -> bool:
    return _dt(e).startswith(("int", "uint"))


NARROW_FLOATS = ("float16", "bfloat16")
FLOAT32_MAX = 3.4028234663852886e38


def _div(a, b):
    """a / b; integers truncate toward zero (ONNX, C), and the cases where C's division traps
    (x / 0, INT_MIN / -1: SIGFPE on x86) give numpy's answers, 0 and the wrapped -x. A 16-bit float
    divided by a finite nonzero constant is multiplied in float32 by the constant's reciprocal:
    the quotient rounded once more, so at most one unit in its last place off, where CUDA divides
    half values through float32 with a correction step, 9 instructions an element (a sixth of a
    GEMM's GELU epilogue, x / sqrt(2), went to it)."""
    if not _is_int(a):
        d = _dt(a)
        c = _const_float(b) if d in NARROW_FLOATS else None
        if c is not None and c != 0 and math.isfinite(c) and abs(1 / c) <= FLOAT32_MAX:
            return tir.Cast(d, tir.Cast("float32", a) * _c(1 / c, "float32"))
        return a / b
    d = _dt(a)
    safe = tir.Select(b == _c(0, d), _c(1, d), b)
    q = tir.truncdiv(a, safe)
    if d.startswith("int"):
        q = tir.Select(b == _c(-1, d), _c(0, d) - a, q)
    return tir.Select(b == _c(0, d), _c(0, d), q)


def _int_pow(a, b):
    """a ** b for integers, wrapping on overflow as numpy does.

    Binary exponentiation over the low 8 bits of the exponent, one Let-bound square and product
    a bit (TVM's passes take time exponential in a longer Let chain). That is exact for exponents
    below 256 (every exponent of an 8-bit type); beyond, |a| <= 1 and even a (a ** 256 is 0
    modulo 2 ** 64) are exact too, and odd a uses a ** e == a ** (e mod 2 ** (bits - 2)) modulo
    2 ** bits, exact while that reduced exponent is below 256. Known limit: an odd |a| >= 3 with
    a reduced exponent of 256 or more (a true result past 3 ** 256, overflowed in every integer
    type) wraps from the exponent's low 8 bits only. A negative exponent gives the truncated real
    value: 1 for a == 1, +-1 for a == -1, else 0."""
    d = _dt(a)
    bits = int(d[3:] if d.startswith("int") else d[4:])
    one, zero = _c(1, d), _c(0, d)
    steps = 8

    def step(k, e, base, acc):
        if k == steps:
            return acc
        bv, av = tir.Var(f"pow_b{k}", d), tir.Var(f"pow_r{k}", d)
        bit = tir.bitwise_and(tir.shift_right(e, _c(k, d)), one) == one
        return tir.Let(bv, base, tir.Let(av, tir.Select(bit, acc * bv, acc), step(k + 1, e, bv * bv, av)))

    def chain(e_value, base):
        ev = tir.Var("pow_e", d)
        return tir.Let(ev, e_value, step(0, ev, base, one))

    if bits <= steps:  # every exponent of the type has at most 8 bits
        pos = chain(b, a)
    else:
        big_e = b >= _c(1 << steps, d)
        e = tir.Select(big_e, tir.bitwise_and(b, _c((1 << (bits - 2)) - 1, d)), b)
        even = tir.bitwise_and(a, one) == zero
        pos = tir.Select(tir.And(big_e, even), zero, chain(e, a))  # even ** (>= 256) wraps to 0
    if d.startswith("uint"):
        return pos
    minus_one = _c(-1, d)
    neg = tir.Select(a == one, one, tir.Select(a == minus_one,
                                               tir.Select(tir.bitwise_and(b, one) == one, minus_one, one), zero))
    return tir.Select(b < zero, neg, pos)


MAX_UNROLLED_POWER = 4  # a constant integral exponent up to this is multiplications


def _const_float(e) -> Optional[float]:
    """The value of a float constant expression (through casts), else None."""
    while isinstance(e, tir.Cast):
        e = e.value
    return float(e.value) if isinstance(e, (tir.FloatImm, tir.IntImm)) else None


def _float_pow(a, b):
    """a ** b for floats, as numpy: a negative base keeps its sign under an integral exponent
    and is NaN under any other. Not left to the target's pow: wherever pow is lowered through
    exp(b * log(a)) (CUDA's fast math, vector math libraries) a negative base gives NaN, which
    broke GELU's x ** 3 and RMSNorm's x ** 2. A small integral constant exponent is
    multiplications, exact and cheaper; 0.5 is a square root, as in numpy."""
    d = _dt(a)
    one = _c(1, d)
    c = _const_float(b)
    if c is not None and c == int(c) and abs(c) <= MAX_UNROLLED_POWER:
        n = int(abs(c))
        if n == 0:
            return one
        def product(x):
            r = x
            for _ in range(n - 1):
                r = r * x
            return one / r if c < 0 else r
        return product(a) if n == 1 else bind(a, product)
    def signed(x, y):
        m = tir.power(tir.abs(x), y)
        negative = tir.And(x < _c(0, d), x != _c(-math.inf, d))  # pow(-inf, y) is pow(inf, y) or its negation
        odd_neg = tir.Select(x < _c(0, d), _c(0, d) - m, m)
        if c is not None:  # the exponent's kind is known here
            if c != math.floor(c):
                return tir.Select(negative, _c(math.nan, d), m)
            return odd_neg if c % 2 == 1 else m
        integral = tir.floor(y) == y
        odd = tir.And(integral, tir.floor(y * _c(0.5, d)) * _c(2, d) != y)
        r = tir.Select(odd, odd_neg, tir.Select(tir.And(negative, tir.Not(integral)), _c(math.nan, d), m))
        return tir.Select(y == _c(0, d), one, r)
    return bind_all([a, b], signed) if c is None else bind(a, lambda x: signed(x, b))


BINARY: dict[str, Scalar] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": _div,
    "maximum": fmax,
    "minimum": fmin,
    "pow": lambda a, b: _int_pow(a, b) if _is_int(a) else _float_pow(a, b),
}


def _int_mod(a, b, truncated: bool):
    """a mod b for integers: the sign of b (floored, Python) or of a (truncated, C); where C's
    remainder traps (x % 0, INT_MIN % -1: SIGFPE on x86) numpy's answer, 0."""
    d = _dt(a)
    zero = _c(0, d)
    safe = tir.Select(b == zero, _c(1, d), b)
    r = tir.truncmod(a, safe) if truncated else tir.floormod(a, safe)
    if d.startswith("int"):
        r = tir.Select(b == _c(-1, d), zero, r)
    return tir.Select(b == zero, zero, r)


def _float_mod(a, b, truncated: bool):
    """C's fmod (truncated), or numpy's mod (floored): fmod moved into b's sign, a zero result
    taking b's sign (numpy's own npy_divmod, so inf, NaN and signed zeros come out as numpy's)."""
    d = _dt(a)
    zero = _c(0, d)
    r = tir.fmod(a, b)
    if truncated:
        return r
    other_side = tir.Or(tir.And(b < zero, r > zero), tir.And(b > zero, r < zero))
    return tir.Select(r == zero, tir.copysign(zero, b), tir.Select(other_side, r + b, r))


def _mod(a, b, fmod=0):
    """ONNX Mod: fmod=0 the floored remainder (Python's %, numpy.mod), fmod=1 the truncated one
    (C's fmod, numpy.fmod); half inputs computed in float32."""
    if _is_int(a):
        return _int_mod(a, b, bool(fmod))
    if _dt(a) in ("float16", "bfloat16"):
        f = lambda v: tir.Cast("float32", v)  # noqa: E731
        return tir.Cast(_dt(a), _float_mod(f(a), f(b), bool(fmod)))
    return _float_mod(a, b, bool(fmod))


def _bitshift(a, b, direction="left"):
    """a shifted by b bits, as onnx.reference: a shift of the type's width or more, or a negative
    one, gives 0 (a right shift of a negative signed value: -1); a left shift of a signed value
    wraps (done on the unsigned bits: C leaves it undefined)."""
    d = _dt(a)
    signed = d.startswith("int")
    bits = int(d[3:] if signed else d[4:])
    zero = _c(0, d)
    out_of_range = b >= _c(bits, d)
    if signed:
        out_of_range = tir.Or(out_of_range, b < zero)
    n = tir.Select(out_of_range, zero, b)
    if direction == "left":
        if signed:
            u = f"uint{bits}"
            shifted = tir.Cast(d, tir.shift_left(tir.Cast(u, a), tir.Cast(u, n)))
        else:
            shifted = tir.shift_left(a, n)
        return tir.Select(out_of_range, zero, shifted)
    fill = tir.Select(a < zero, _c(-1, d), zero) if signed else zero
    return tir.Select(out_of_range, fill, tir.shift_right(a, n))


def _check_mod(name: str, attrs: dict, dtype: str) -> Optional[str]:
    if attrs["fmod"] not in (0, 1):
        return f"fmod must be 0 or 1, got {attrs['fmod']!r}"
    return None if dtype != "bool" else "expects numeric tensors, got bool"


def _check_shift(name: str, attrs: dict, dtype: str) -> Optional[str]:
    if attrs["direction"] not in ("left", "right"):
        return f"direction must be 'left' or 'right', got {attrs['direction']!r}"
    return None if dtype.startswith(("int", "uint")) else f"expects integer tensors, got {dtype}"


# binary rules with attributes: name -> (rule, attribute defaults, check(name, attrs, dtype) naming
# what is wrong with the attributes or the operands' dtype)
BINARY_ATTRS: dict[str, tuple[Scalar, dict, Callable[[str, dict, str], Optional[str]]]] = {
    "mod": (_mod, {"fmod": 0}, _check_mod),
    "bitshift": (_bitshift, {"direction": "left"}, _check_shift),
}


def _check_float(name: str, v: Value) -> None:
    if not _dt(v).startswith(("float", "bfloat")):
        raise OpError(f"{name}: expects a float tensor, got {_dt(v)}")


INT_OK = {"clip", "abs", "neg", "relu", "identity", "sign", "shrink"}  # defined on integers too (ONNX allows them)


def _register_unary(name: str, rule: Scalar, defaults: dict) -> None:
    def compute(inputs: Sequence[Value], attrs: dict) -> Value:
        (x,) = inputs
        if not (name in INT_OK and _dt(x).startswith(("int", "uint"))):
            _check_float(name, x)
        return lazy(x.shape, _dt(x), lambda *i: bind(x(*i), lambda v: rule(v, **attrs)))

    compute.__doc__ = f"Elementwise {name}."
    register_op(name, OpPattern.ELEMWISE, num_inputs=1, attrs=defaults)(compute)


def _register_binary(name: str, rule: Scalar, defaults: Optional[dict] = None,
                     check: Optional[Callable[[str, dict, str], Optional[str]]] = None) -> None:
    def compute(inputs: Sequence[Value], attrs: dict) -> Value:
        a, b = inputs
        if _dt(a) != _dt(b):
            raise OpError(f"{name}: dtype mismatch {_dt(a)} vs {_dt(b)}")
        problem = check(name, attrs, _dt(a)) if check else None
        if problem:
            raise OpError(f"{name}: {problem}")
        shape = broadcast_shape([a.shape, b.shape], f"{name}'s inputs")
        fa, fb = broadcast_to(a, shape), broadcast_to(b, shape)
        return lazy(shape, _dt(a), lambda *i: bind_all([fa(*i), fb(*i)], lambda x, y: rule(x, y, **attrs)))

    compute.__doc__ = f"Broadcasting {name}."
    register_op(name, OpPattern.BROADCAST, num_inputs=2, attrs=defaults)(compute)


for _n, (_r, _d) in UNARY.items():
    _register_unary(_n, _r, _d)
for _n, _r in BINARY.items():
    _register_binary(_n, _r)
for _n, (_r, _d, _chk) in BINARY_ATTRS.items():
    _register_binary(_n, _r, _d, _chk)


COMPARE: dict[str, Scalar] = {
    "less": lambda a, b: a < b,
    "greater": lambda a, b: a > b,
    "less_equal": lambda a, b: a <= b,
    "greater_equal": lambda a, b: a >= b,
    "equal": lambda a, b: a == b,
}


def _register_bool_binary(name: str, rule: Scalar, check: Callable[[str, str], Optional[str]], doc: str) -> None:
    """A broadcasting binary op with a bool result; `check(dtype_a, dtype_b)` names what is wrong."""

    def compute(inputs: Sequence[Value], attrs: dict) -> Value:
        a, b = inputs
        problem = check(_dt(a), _dt(b))
        if problem:
            raise OpError(f"{name}: {problem}")
        shape = broadcast_shape([a.shape, b.shape], f"{name}'s inputs")
        fa, fb = broadcast_to(a, shape), broadcast_to(b, shape)
        return lazy(shape, "bool", lambda *i: rule(fa(*i), fb(*i)))

    compute.__doc__ = doc
    register_op(name, OpPattern.BROADCAST, num_inputs=2)(compute)


for _n, _r in COMPARE.items():
    _register_bool_binary(_n, _r, lambda x, y: f"dtype mismatch {x} vs {y}" if x != y else None,
                          f"Broadcasting comparison {_n} (a bool result; NaN compares false, as IEEE).")

LOGICAL: dict[str, Scalar] = {
    "logical_and": lambda a, b: tir.And(a, b),
    "logical_or": lambda a, b: tir.Or(a, b),
    "logical_xor": lambda a, b: tir.Or(tir.And(a, tir.Not(b)), tir.And(tir.Not(a), b)),  # (i1 != i1 breaks llvm)
}


for _n, _r in LOGICAL.items():
    _register_bool_binary(_n, _r, lambda x, y: None if x == y == "bool" else f"expects bool tensors, got {x} and {y}",
                          f"Broadcasting {_n} of bool tensors.")


def _isinf(x, detect_positive=True, detect_negative=True):
    d = _dt(x)
    if detect_positive and detect_negative:
        return tir.isinf(x)
    if detect_positive:
        return x == _c(math.inf, d)
    if detect_negative:
        return x == _c(-math.inf, d)
    return tir.const(False, "bool")


# float -> bool predicates: name -> (rule, attribute defaults)
PREDICATES: dict[str, tuple[Scalar, dict]] = {
    "isnan": (lambda x: tir.isnan(x), {}),
    "isinf": (_isinf, {"detect_positive": True, "detect_negative": True}),
}


def _register_predicate(name: str, rule: Scalar, defaults: dict) -> None:
    def compute(inputs: Sequence[Value], attrs: dict) -> Value:
        (x,) = inputs
        _check_float(name, x)
        return lazy(x.shape, "bool", lambda *i: rule(x(*i), **attrs))

    compute.__doc__ = f"Elementwise {name} of a float tensor (a bool result)."
    register_op(name, OpPattern.ELEMWISE, num_inputs=1, attrs=defaults)(compute)


for _n, (_r, _d) in PREDICATES.items():
    _register_predicate(_n, _r, _d)


@register_op("logical_not", OpPattern.ELEMWISE, num_inputs=1)
def logical_not(inputs: Sequence[Value], attrs: dict) -> Value:
    """Elementwise not of a bool tensor."""
    (x,) = inputs
    if _dt(x) != "bool":
        raise OpError(f"logical_not: expects a bool tensor, got {_dt(x)}")
    return lazy(x.shape, "bool", lambda *i: tir.Not(x(*i)))


@register_op("cast", OpPattern.ELEMWISE, num_inputs=1, attrs={"dtype": "float32"})
def cast(inputs: Sequence[Value], attrs: dict) -> Value:
    """Change dtype."""
    (x,) = inputs
    return lazy(x.shape, attrs["dtype"], lambda *i: tir.Cast(attrs["dtype"], x(*i)))


@register_op("sum_n", OpPattern.ELEMWISE)
def sum_n(inputs: Sequence[Value], attrs: dict) -> Value:
    """Sum of several tensors (ONNX Sum), broadcasting."""
    if not inputs:
        raise OpError("sum_n: needs at least one input")
    if len({v.dtype for v in inputs}) > 1:
        raise OpError(f"sum_n: dtype mismatch {[v.dtype for v in inputs]}")
    shape = broadcast_shape([v.shape for v in inputs], "sum_n's inputs")
    fs = [broadcast_to(v, shape) for v in inputs]

    def fn(*i):
        acc = fs[0](*i)
        for f in fs[1:]:
            acc = acc + f(*i)
        return acc

    return lazy(shape, inputs[0].dtype, fn)


@register_op("where", OpPattern.BROADCAST, num_inputs=3)
def where(inputs: Sequence[Value], attrs: dict) -> Value:
    """Select by a boolean/nonzero condition, broadcasting."""
    c, a, b = inputs
    if _dt(a) != _dt(b):
        raise OpError(f"where: dtype mismatch {_dt(a)} vs {_dt(b)}")
    shape = broadcast_shape([c.shape, a.shape, b.shape], "where's inputs")
    fc, fa, fb = (broadcast_to(v, shape) for v in (c, a, b))
    zero = tir.const(0, _dt(c)) if _dt(c) != "bool" else None
    return lazy(shape, _dt(a),
                lambda *i: tir.Select(fc(*i) if zero is None else fc(*i) != zero, fa(*i), fb(*i)))
