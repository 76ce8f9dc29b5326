"""float8 / float4 / e8m0 / int4 / int2 conversions (tefuse/ops/lowbit.py) against ml_dtypes and
onnx's own conversion helpers: every float16 value, every code, and float32 edge values."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from onnx.numpy_helper import saturate_cast, to_float8e8m0

from tefuse.ops.lowbit import E8M0, FORMATS
from tests.reference import run_op


def _float32_probe() -> np.ndarray:
    """Every float16 value, widened, plus float32 values between them, halfway ties, subnormals,
    huge values and the specials."""
    h = np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float32)
    rng = np.random.default_rng(0)
    r = rng.standard_normal(20000).astype(np.float32) * np.float32(2.0) ** rng.integers(-30, 30, 20000)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-45, -1e-45, 3.4e38, -3.4e38,
                        1e6, -1e6, 1e-7, -1e-7, 448, 464, 465, 480, 57344, 61440, 61441, 6, 6.5, 7,
                        0.25, 0.75, 1.25, 240, 247, 248, 256], np.float32)
    with np.errstate(all="ignore"):
        return np.concatenate([h, r, special]).astype(np.float32)


def _same(got_bits: np.ndarray, want: np.ndarray, fmt: str, x: np.ndarray) -> None:
    w = want.view(np.uint8)
    gv, wv = got_bits.view(getattr(ml_dtypes, fmt)).astype(np.float32), want.astype(np.float32)
    # NaN's sign is not part of the value; everything else must be bit-exact
    bad = (got_bits != w) & ~(np.isnan(gv) & np.isnan(wv))
    idx = np.nonzero(bad)[0][:5]
    assert not bad.any(), f"{fmt}: {bad.sum()} differ, e.g. " + ", ".join(
        f"{x[i]!r} -> {got_bits[i]:#04x} want {w[i]:#04x}" for i in idx)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("saturate", [True, False], ids=["saturate", "no_saturate"])
def test_encode_matches_onnx(fmt, saturate):
    x = _float32_probe()
    dt = getattr(ml_dtypes, fmt)
    with np.errstate(all="ignore"):
        if fmt.startswith("float4"):
            want = x.astype(dt)  # ONNX casts to FLOAT4E2M1 through ml_dtypes (it saturates)
        else:
            want = saturate_cast(x, dt) if saturate else x.astype(dt)
    got = run_op("fp_encode", x, format=fmt, saturate=saturate)
    assert got.dtype == dt  # the run hands the op's output back as the format's ml_dtypes type
    _same(got.view(np.uint8), want, fmt, x)


@pytest.mark.parametrize("fmt", [*sorted(FORMATS), E8M0])
def test_decode_every_code(fmt):
    codes = np.arange(256 if not fmt.startswith("float4") else 16, dtype=np.uint8)
    want = codes.view(getattr(ml_dtypes, fmt)).astype(np.float32)
    got = run_op("fp_decode", codes, format=fmt)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[~np.isnan(want)], want[~np.isnan(want)])
    ok = ~np.isnan(want)
    assert (np.signbit(got[ok]) == np.signbit(want[ok])).all(), "signed zeros differ"


@pytest.mark.parametrize("round_mode", ["up", "nearest", "down"])
@pytest.mark.parametrize("saturate", [True, False], ids=["saturate", "no_saturate"])
def test_encode_e8m0_matches_onnx(round_mode, saturate):
    x = np.abs(_float32_probe())
    x = x[np.isfinite(x) | np.isnan(x)]
    want = to_float8e8m0(x, saturate=saturate, round_mode=round_mode)
    got = run_op("fp_encode", x, format=E8M0, saturate=saturate, round_mode=round_mode)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("bits,signed", [(4, True), (4, False), (2, True), (2, False)])
@pytest.mark.parametrize("src", ["float32", "float16", "int32", "int8"])
def test_int_wrap_matches_ml_dtypes(bits, signed, src):
    dt = getattr(ml_dtypes, f"{'' if signed else 'u'}int{bits}")
    if src.startswith("float"):
        x = np.concatenate([np.arange(-40, 40, 0.25), [-0.0, 0.5, -0.5, 2.5, -2.5, 1e3, -1e3, np.nan, np.inf,
                                                       -np.inf, 6e4, -6e4]]).astype(src)
    else:
        info = np.iinfo(src)
        x = np.concatenate([np.arange(max(info.min, -300), min(info.max, 300)), [info.min, info.max]]).astype(src)
    want = x.astype(dt).astype(np.int8 if signed else np.uint8)
    got = run_op("int_wrap", x, bits=bits, signed=signed)
    assert got.dtype == dt
    np.testing.assert_array_equal(got.astype(want.dtype), want)


def _loads_of(expr, tensor) -> int:
    """How many times `expr` reads `tensor` (its te.tensor_load calls)."""
    from tvm.ir.expr import Call
    from tvm_ffi import structural_walk

    found = []

    def on_call(n):
        if getattr(n.op, "name", "") == "te.tensor_load" and n.args[0].same_as(tensor):
            found.append(n)

    structural_walk(expr, (Call, on_call))
    return len(found)


@pytest.mark.parametrize("fmt", ["float8_e4m3fn", "float8_e5m2"])
def test_encode_reads_its_operand_once(fmt):
    """A fused chain ending in a float8 quantize is computed once, not once per select of the
    encoder (the wgmma epilogues compile with TIR's CSE off)."""
    from tvm import te

    from tefuse.ops.lowbit import encode

    a = te.placeholder((8,), "float32", name="a")
    chain = a[0]
    for k in range(6):  # larger than what ops.value.bind leaves unbound
        chain = chain * np.float32(1.5 + k) + np.float32(k)
    assert _loads_of(encode(fmt, chain), a) == 1


@pytest.mark.parametrize("fmt", ["float8_e4m3fn", "float8_e5m2"])
def test_dequantize_reads_each_code_once(fmt):
    from tvm import te

    from tefuse.ops.registry import get_op
    from tefuse.ops.value import Value

    codes = te.placeholder((4, 8), "uint8", name="codes")
    x = Value.of_tensor(codes)
    scale = Value.of_tensor(te.placeholder((), "float32", name="s"))
    zp = Value.of_tensor(te.placeholder((), "uint8", name="z"))
    op = get_op("dequantize_linear")
    out = op.compute([x, scale, zp], op.normalize_attrs({"src": fmt, "dtype": "float32"}))
    assert _loads_of(out(0, 0), codes) == 1
