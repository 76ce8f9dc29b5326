"""int8 products on the GPU's tensor cores (Hopper's wgmma m64nNk32 s8 where B is [N, K], else
mma.sync m16n8k32 s8; int32 accumulation) against the same graphs on llvm, bit for bit; float8
products (wgmma e4m3 / e5m2) against llvm within the tensor cores' accumulation; and
onnxruntime's QDQ models built for CUDA against onnxruntime's CPU run, within one output
quantization step.

Deselected by default; run with  python -m pytest -m gpu tests/gpu/test_qdq_cuda_gpu.py -q
"""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse.frontend.onnx import import_onnx
from tests.graph import test_qdq as Q
from tefuse.target import device_caps, make_target
from tests.schedules.cuda.gemm.test_mma_int8 import KINDS, int8_nhwc_conv, int8_product
from tests.schedules.cuda.gemm.test_wgmma_8bit import FP8

pytestmark = pytest.mark.gpu


def _template(kind: str) -> str:
    """The template an int8 product takes here: wgmma on Hopper unless B is read [K, N] (the
    NCHW conv's OIHW weight is, as an implicit GEMM's B)."""
    hopper = device_caps(make_target("cuda")).has_wgmma
    return "wgmma_gemm" if hopper and kind != "conv2d" else "tensorcore_gemm"


@pytest.mark.parametrize("kind", KINDS)
def test_int8_products_on_tensor_cores_match_llvm_exactly(kind):
    graph = int8_product(kind, np.random.default_rng(0))
    cg = tefuse.build(graph, "cuda")
    assert [k.template for k in cg.kernels] == [_template(kind)]
    x = np.random.default_rng(1).integers(-128, 128, graph.inputs[0].shape).astype(np.int8)
    np.testing.assert_array_equal(cg.run(x=x)[0], tefuse.build(graph, "llvm").run(x=x)[0])


@pytest.mark.parametrize("pad_value", [0.0, -128.0], ids=["zero-padding", "zero-point-padding"])
def test_int8_nhwc_conv_tiles_on_cp_async_match_llvm_exactly(pad_value):
    """16-byte cp.async operand tiles with masked tail rows and padding (passes/int_tile_copies.py)."""
    graph = int8_nhwc_conv(np.random.default_rng(0), pad_value)
    cg = tefuse.build(graph, "cuda")
    assert [k.template for k in cg.kernels] == [_template("conv2d_ohwi")]
    x = np.random.default_rng(1).integers(-128, 128, graph.inputs[0].shape).astype(np.int8)
    np.testing.assert_array_equal(cg.run(x=x)[0], tefuse.build(graph, "llvm").run(x=x)[0])


@pytest.mark.parametrize("kind", FP8)
def test_fp8_products_on_hopper_tensor_cores_match_llvm(kind):
    """wgmma e4m3 / e5m2 against llvm's exact products summed in float32: Hopper's fp8 tensor
    cores add the products in a narrower accumulator than float32, hence the tolerance."""
    if not device_caps(make_target("cuda")).has_wgmma:
        pytest.skip("float8 products take the tensor cores on Hopper (wgmma) only")
    import ml_dtypes

    graph = FP8[kind](np.random.default_rng(0))
    cg = tefuse.build(graph, "cuda")
    assert [k.template for k in cg.kernels] == ["wgmma_gemm"]
    fmt = "float8_" + kind.split("-")[1]
    x = np.random.default_rng(1).standard_normal(graph.inputs[0].shape).astype(getattr(ml_dtypes, fmt)).view(np.uint8)
    got, want = cg.run(x=x)[0], tefuse.build(graph, "llvm").run(x=x)[0]
    assert np.abs(got - want).max() <= 1e-3 * np.abs(want).max()


def test_a_deep_fp8_product_stays_within_float32_accumulation_of_llvm():
    """K = 4096: each 128-deep row's sum is promoted to float32 (intrin/wgmma.promotes); summed
    whole in the tensor cores' fp8 accumulator, the error grows with K (about 2% at 4096)."""
    if not device_caps(make_target("cuda")).has_wgmma:
        pytest.skip("float8 products take the tensor cores on Hopper (wgmma) only")
    import ml_dtypes

    rng = np.random.default_rng(0)
    b = tefuse.GraphBuilder()
    w = rng.standard_normal((256, 4096)).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    graph = b.build(b.op("dense", b.input("x", (256, 4096), "uint8"), b.const(w, name="w"), codes="float8_e4m3fn"))
    x = rng.standard_normal((256, 4096)).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    cg = tefuse.build(graph, "cuda")
    assert [k.template for k in cg.kernels] == ["wgmma_gemm"]
    got, want = cg.run(x=x)[0], tefuse.build(graph, "llvm").run(x=x)[0]
    assert np.abs(got - want).max() <= 1e-3 * np.abs(want).max()


@pytest.mark.parametrize("net,x_shape", [(Q._conv_net, (1, 3, 8, 8)), (Q._mlp, (4, 16))], ids=["convnet", "mlp"])
def test_qdq_models_on_cuda_match_onnxruntime(net, x_shape, tmp_path):
    from onnx import numpy_helper

    rng = np.random.default_rng(0)
    m = Q._quantized(net(rng), x_shape, tmp_path, rng)
    y_scale = float(numpy_helper.to_array(next(i for i in m.graph.initializer if i.name == "y_scale")))
    x = rng.standard_normal(x_shape).astype(np.float32)
    want = Q.onnx_semantics(m, x)
    y = tefuse.build(import_onnx(m), "cuda").run(x)[0]
    assert np.abs(y - want).max() <= y_scale * 1.0001


@pytest.mark.parametrize("fmt", ["float8_e4m3fn", "float8_e5m2"])
def test_float8_conversions_on_the_gpu_equal_onnx_saturating_cast(fmt):
    """The device's conversion instructions (codegen/float8.py, sm_89+) or the exact rule: every
    float16 value, float32 values between them, huge values and infinities, encoded and decoded,
    equal ONNX's saturating cast (round to nearest even); a NaN stays a NaN, its sign aside."""
    import ml_dtypes
    from onnx.numpy_helper import saturate_cast

    from tefuse import GraphBuilder

    rng = np.random.default_rng(0)
    h = np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float32)
    r = (rng.standard_normal(65280) * 2.0 ** rng.integers(-30, 30, 65280)).astype(np.float32)
    edges = np.resize(np.array([np.inf, -np.inf, 3e38, -3e38, 1e-45, 0.0], np.float32), 256)
    x = np.concatenate([h, r, edges]).reshape(-1, 256)
    b = GraphBuilder()
    xi = b.input("x", x.shape, "float32")
    codes = b.op("fp_encode", xi, format=fmt)
    graph = b.build([codes, b.op("fp_decode", codes, format=fmt)])
    got_codes, got = tefuse.build(graph, "cuda").run(x=x)
    with np.errstate(all="ignore"):
        want = saturate_cast(x, getattr(ml_dtypes, fmt))
    nan = np.isnan(want.astype(np.float32))
    np.testing.assert_array_equal(got_codes.view(np.uint8)[~nan], want.view(np.uint8)[~nan])
    assert np.isnan(got[nan]).all()
    np.testing.assert_array_equal(got[~nan], want.astype(np.float32)[~nan])


# Hopper's fp8 accumulator keeps about 14 bits of mantissa (DeepSeek-V3's measurement): this
# 4096-deep product of standard-normal e4m3 codes, summed whole in it, lands 1.3e-3 (norm) from
# float32 sums on an H200. The bound is that measurement with room, not a derivation: emulated on
# the CPU, a truncating accumulator of 14 bits gives 8e-4 to 3.2e-3 (adding 128- or 32-deep
# partial sums), of 13 bits 6.4e-3. A wrong product lands near 1.
FAST_ACCUM_NORM = 4e-3


def test_a_fast_accumulation_fp8_product_stays_within_the_tensor_cores_accumulation_of_llvm():
    """fast_accum (ops/codes.fast_accumulation): the whole 4096-deep reduction in the tensor
    cores' fp8 accumulator, within FAST_ACCUM_NORM (a norm) of llvm's float32 sums, and its
    largest error within 3% of the largest output."""
    if not device_caps(make_target("cuda")).has_wgmma:
        pytest.skip("float8 products take the tensor cores on Hopper (wgmma) only")
    import ml_dtypes

    rng = np.random.default_rng(0)
    b = tefuse.GraphBuilder()
    w = rng.standard_normal((256, 4096)).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    graph = b.build(b.op("dense", b.input("x", (256, 4096), "uint8"), b.const(w, name="w"),
                         codes="float8_e4m3fn", fast_accum=True))
    x = rng.standard_normal((256, 4096)).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    cg = tefuse.build(graph, "cuda")
    assert [k.template for k in cg.kernels] == ["wgmma_gemm"] and "rowsum" not in cg.source("cuda")
    got, want = cg.run(x=x)[0], tefuse.build(graph, "llvm").run(x=x)[0]
    assert np.linalg.norm(got - want) <= FAST_ACCUM_NORM * np.linalg.norm(want)
    assert np.abs(got - want).max() <= 3e-2 * np.abs(want).max()


def test_a_stem_pooled_on_its_int8_codes_matches_llvm_within_one_code():
    """ResNet's stem as a quantized build has it: conv, ReLU and the int8 quantize in one fp16
    kernel storing codes, then the window pool on those codes (graph/pool_codes.py); within one
    code of llvm (the fp16 conv sums in another order)."""
    b = tefuse.GraphBuilder()
    rng = np.random.default_rng(0)
    x = b.input("x", (2, 3, 64, 64))
    c = b.conv2d(x, b.const((rng.standard_normal((64, 3, 7, 7)) * 0.1).astype("float32")), strides=2, padding=3)
    p = b.max_pool2d(b.relu(c), kernel=(3, 3), strides=(2, 2), padding=(1, 1))
    g = b.build(b.quantize_linear(p, b.const(np.array(0.02, "float32")), b.const(np.array(0, "int8")), dtype="int8"))
    cg = tefuse.build(g, "cuda", precision="fp16")
    conv, pool = (next(k for k in cg.kernels if any(n.op == op for n in k.group.nodes))
                  for op in ("conv2d", "max_pool2d"))
    assert [o.dtype for o in conv.outputs] == ["int8"] and [i.dtype for i in pool.params] == ["int8"]
    assert pool.template == "cuda_window_pool"
    xv = rng.standard_normal((2, 3, 64, 64)).astype("float32")
    got, want = cg.run(x=xv)[0], tefuse.build(g, "llvm", precision="fp16").run(x=xv)[0]
    assert got.dtype == want.dtype == np.int8
    got, want = got.astype(np.int32), want.astype(np.int32)
    assert np.abs(got - want).max() <= 1 and (got == want).mean() > 0.99


def test_an_int8_nhwc_max_pool_on_the_gpu_equals_numpy():
    """The window pool's integer path: the reduction is the kernel's output, stored from
    registers (schedules/gpu/pool.py), the padding the lowest code."""
    b = tefuse.GraphBuilder()
    g = b.build(b.max_pool2d(b.input("x", (3, 17, 17, 64), "int8"), kernel=(3, 3), strides=(2, 2),
                             padding=(1, 1), layout="NHWC"))
    cg = tefuse.build(g, "cuda")
    assert [k.template for k in cg.kernels] == ["cuda_window_pool"]
    x = np.random.default_rng(0).integers(-128, 128, (3, 17, 17, 64)).astype(np.int8)
    pad = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)), constant_values=-128)
    want = np.lib.stride_tricks.sliding_window_view(pad, (3, 3), axis=(1, 2))[:, ::2, ::2].max(axis=(-1, -2))
    np.testing.assert_array_equal(cg.run(x=x)[0], want)


def test_a_layer_norms_codes_are_the_quantize_of_the_rows_it_stored(rng):
    """LayerNorm -> QuantizeLinear, the rows read on too (both graph outputs): one row-wise
    kernel writes the rows and their codes, and the codes equal numpy's quantize of the rows the
    kernel stored (half to even, saturated), exactly."""
    b = tefuse.GraphBuilder()
    x = b.input("x", (512, 768), "float16")
    y = b.layer_norm(x, b.const(rng.uniform(0.5, 1.5, 768).astype(np.float16)),
                     b.const(rng.normal(0, 0.1, 768).astype(np.float16)))
    scale = np.float32(0.02)
    q = b.quantize_linear(y, b.const(np.array(scale)), b.const(np.array(0, np.int8)), dtype="int8")
    cg = tefuse.build(b.build([y, q]), "cuda")
    (kern,) = cg.kernels
    assert [n.op for n in kern.group.nodes] == ["layer_norm", "quantize_linear"]
    rows, codes = cg.run(x=(rng.standard_normal((512, 768)) * 3).astype(np.float16))
    want = np.clip(np.rint(rows.astype(np.float32) / scale), -128, 127).astype(np.int8)
    np.testing.assert_array_equal(codes, want)


@pytest.mark.parametrize("precision,code", [("int8", "int8"), ("fp8", "uint8")])
def test_a_projection_shortcuts_codes_on_the_gpu_match_llvm(precision, code):
    """A downsampling block (graph/calibration.py's projection shortcuts): the shortcut conv's
    tensor-core kernel stores codes, the body's last conv reads them in its epilogue; the block's
    output as llvm computes it (int8 exactly in the products; float8 within its accumulation)."""
    from tests.test_calibrate import downsample_net, ds_samples
    from tefuse.calibrate import calibrate

    g, samples = downsample_net(c=64, hw=28), ds_samples(2, c=64, hw=28)
    cal = calibrate(g, samples, "max")
    cg = tefuse.build(g, "cuda", precision=precision, calibration=cal)
    short = next(k for k in cg.kernels if any(n.name == "down" for n in k.group.nodes))
    assert [o.dtype for o in short.outputs] == [code] and short.template in ("wgmma_gemm", "tensorcore_gemm")
    ref = tefuse.build(g, "llvm", precision=precision, calibration=cal)
    for s in samples:
        got, want = cg.run(s)[0].astype(np.float32), ref.run(s)[0].astype(np.float32)
        assert np.abs(got - want).max() <= 0.02 * np.abs(want).max()
