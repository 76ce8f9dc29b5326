"""One-byte products on Hopper's wgmma without a GPU: int8 (a QDQ model's anchors, graph/qdq.py)
and float8 codes (ops/codes.py). On sm_90 the wgmma template takes them untuned, its PTX holds
wgmma.mma_async m64nNk32 s8 into s32, or e4m3 / e5m2 into f32, with both operand tiles on 16-byte
cp.async, and the same schedule untensorized (128-deep swizzled tiles, padded tails, a conv's
padding filled with the zero point) computes the same numbers on llvm: exact integers; float8's
exact products summed in float32. Whether the device function's accumulator layout holds is for
a GPU run (tests/gpu/test_qdq_cuda_gpu.py)."""
from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest
import tvm
from tvm import s_tir

import tefuse
from tefuse.codegen.lower import lower_group
from tefuse.bench.forced_config import ForcedConfig
from tefuse.codegen.ptx import compile_to_ptx, ptxas_report
from tefuse.codegen.schedule import find_template
from tefuse.fusion import fuse_graph
from tefuse.graph import GraphBuilder
from tefuse.schedules.cuda.intrin.wgmma import bk_of
from tefuse.target import make_target

from .test_mma_int8 import int8_nhwc_conv, int8_product

PRODUCTS = {"dense": lambda rng: int8_product("dense", rng), "matmul": lambda rng: int8_product("matmul", rng),
            "conv-ohwi": lambda rng: int8_product("conv2d_ohwi", rng),
            "conv-nhwc-fill": lambda rng: int8_nhwc_conv(rng, -128.0)}


def _fp8_product(kind: str, fmt: str, rng):
    """A product of float8 codes (uint8 data and constant weight) times a per-channel scale: a
    float8 QDQ anchor (graph/qdq.py), a conv padded with code 0 (+0.0)."""
    b = GraphBuilder()
    codes = lambda shape, s: (rng.standard_normal(shape) * s).astype(getattr(ml_dtypes, fmt)).view(np.uint8)
    if kind == "dense":
        x = b.input("x", (37, 96), "uint8")
        y = b.op("dense", x, b.const(codes((80, 96), 1.0), name="w"), codes=fmt)
        n = 80
    else:
        x = b.input("x", (2, 10, 10, 32), "uint8")
        pad = b.op("pad", x, pads=(0, 1, 1, 0, 0, 1, 1, 0), value=0.0)
        y = b.op("conv2d", pad, b.const(codes((3, 3, 32, 48), 0.5), name="w"), layout="NHWC", codes=fmt)
        n = 48
    return b.build(b.op("mul", y, b.const((rng.random(n) * 1e-2).astype(np.float32), name="s")))


FP8 = {f"{kind}-{fmt[7:]}": (lambda rng, kind=kind, fmt=fmt: _fp8_product(kind, fmt, rng))
       for kind in ("dense", "conv") for fmt in ("float8_e4m3fn", "float8_e5m2")}
INSTRUCTION = {**dict.fromkeys(PRODUCTS, r"s32\.s8\.s8"), "dense-e4m3fn": r"f32\.e4m3\.e4m3",
               "conv-e4m3fn": r"f32\.e4m3\.e4m3", "dense-e5m2": r"f32\.e5m2\.e5m2", "conv-e5m2": r"f32\.e5m2\.e5m2"}
ALL = {**PRODUCTS, **FP8}


@pytest.mark.parametrize("kind", ALL)
def test_one_byte_products_take_wgmma_on_hopper(kind):
    cg = tefuse.build(ALL[kind](np.random.default_rng(0)), "cuda:sm_90")
    (k,) = cg.kernels
    assert k.template == "wgmma_gemm"
    ptx = compile_to_ptx(k.source("cuda"), "sm_90a")
    assert re.search(rf"\bwgmma\.mma_async\.sync\.aligned\.m64n\d+k32\.{INSTRUCTION[kind]}\b", ptx)
    assert not re.search(r"\bmma\.sync\b", ptx)
    sizes = re.findall(r"\bcp\.async\.c[ag]\.shared\.global(?:\.\w+)* \[[^]]*\], \[[^]]*\], (\d+)", ptx)
    assert len(sizes) >= 2 and set(sizes) == {"16"}, sorted(set(sizes))
    assert not re.search(r"\bld\.global(?:\.nc)?\.[us]8\b", ptx)


@pytest.mark.parametrize("kind", ["dense", "dense-e4m3fn"])
def test_one_byte_space_is_one_128_byte_row_deep_and_unsliced(kind):
    (group,) = fuse_graph(ALL[kind](np.random.default_rng(0)))
    info = lower_group(group).info
    cuda = make_target("cuda:sm_90")
    t = find_template(cuda, info.anchor_kind, info=info)[0]
    assert t.name == "wgmma_gemm"
    space = t.space(info, cuda)
    admitted = [c for c in space if space.admits(c.index)]
    assert admitted and {c["bk"] for c in admitted} == {bk_of("int8")} == {128}
    assert {c["slices"] for c in admitted} == {1}


@pytest.mark.parametrize("kind", ALL)
def test_one_byte_wgmma_tiling_computes_the_same_numbers_on_llvm(kind):
    """The group as a sm_90 build prepares it (weights [N, K]), scheduled for llvm."""
    graph = ALL[kind](np.random.default_rng(1))
    (k,) = tefuse.build(graph, "cuda:sm_90").kernels
    group = k.group
    lowered = lower_group(group)
    cuda = make_target("cuda:sm_90")
    t = find_template(cuda, lowered.info.anchor_kind, info=lowered.info)[0]
    assert t.name == "wgmma_gemm" and lowered.info.dtype in ("int8", "uint8")
    cfg = t.fallback(lowered.info, cuda, t.space(lowered.info, cuda))
    assert cfg["bk"] == 128
    sch = s_tir.Schedule(lowered.func)
    llvm = make_target("llvm")
    t.apply(sch, lowered.info, cfg, llvm)
    # both operand tiles in the 128-byte swizzle: atoms of 8 rows x 8 chunks x 16 values
    dtype = lowered.info.dtype
    assert len(re.findall(rf"alloc_buffer\(\(\d+, \d+, \d+, 8, 8, 16\), \"{dtype}\"", sch.mod.script())) == 2
    # with the template's rewrites (chunk_guards: the zero-point padding's nested guards)
    lib = tvm.compile(t.finish(sch.mod, lowered.info, cfg, llvm), target=llvm)
    rng = np.random.default_rng(2)
    fmt = lowered.info.attrs.get("codes")
    data = (lambda shape: rng.standard_normal(shape).astype(getattr(ml_dtypes, fmt)).view(np.uint8)) if fmt else \
        (lambda shape: rng.integers(-128, 128, shape).astype(np.int8))
    args = {p.name: p.value if p.value is not None else data(p.shape) for p in lowered.params}
    dev = tvm.cpu()
    (out,) = group.outputs
    got = tvm.runtime.empty(out.shape, out.dtype, dev)
    lib["main"](*[tvm.runtime.tensor(np.asarray(args[p.name]), dev) for p in lowered.params], got)
    want = tefuse.build(graph, "llvm").run(x=args["x"])[0]
    if dtype == "int8":
        np.testing.assert_array_equal(got.numpy(), want)
    else:  # exact products of the codes, summed in another order
        assert np.isfinite(want).all()
        np.testing.assert_allclose(got.numpy(), want, rtol=0, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize("kind", ["dense-e4m3fn", "conv-e5m2"])
def test_float8_products_before_hopper_compute_on_cuda_cores(kind):
    """No mma.sync for float8 here: on sm_80 a product of codes takes a CUDA-core template,
    decoding each code, and compiles."""
    (k,) = tefuse.build(FP8[kind](np.random.default_rng(0)), "cuda:sm_80").kernels
    assert k.template in ("cuda_dense", "conv2d_implicit_gemm")
    ptx = compile_to_ptx(k.source("cuda"), "sm_80")
    assert not re.search(r"\b(?:wgmma|mma\.sync)\b", ptx)


def _fp8_dense(m: int, n: int, k: int):
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    w = rng.standard_normal((n, k)).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    return b.build(b.op("dense", b.input("x", (m, k), "uint8"), b.const(w, name="w"), codes="float8_e4m3fn"))


def test_float8_rows_are_summed_apart_with_a_batch_in_flight():
    """Hopper's fp8 wgmma adds products with a narrow mantissa: each 128-deep row is summed apart
    and added to d[]. Untuned (3 stages) the k loop keeps a batch in flight, rows alternating
    between the halves of the kernel's row sums (passes/row_sums.py); ptxas keeps the wgmma
    asynchronous (no C7514) and every array in registers (no local memory, no spills); tiles at
    most 128 wide."""
    graph = _fp8_dense(4096, 1024, 1024)
    (k,) = tefuse.build(graph, "cuda:sm_90").kernels
    src = k.source("cuda")
    assert re.search(r"_rowsum_h0\(\(", src) and re.search(r"_rowsum_h1_w\(\(", src) and "rowsum_drain" in src
    ptx = compile_to_ptx(src, "sm_90a")
    assert re.search(r"\bwgmma\.mma_async\.sync\.aligned\.m64n128k32\.f32\.e4m3\.e4m3\b", ptx)
    assert not re.search(r"\b(?:ld|st)\.local\b", ptx)
    report = ptxas_report(ptx)
    assert not report.wgmma_serialized and report.spill_bytes == report.stack_bytes == 0, report.text
    (group,) = fuse_graph(graph)
    info = lower_group(group).info
    cuda = make_target("cuda:sm_90")
    t = find_template(cuda, info.anchor_kind, info=info)[0]
    space = t.space(info, cuda)
    tiles = {(c["tile"][:2], c["stages"]) for c in space if space.admits(c.index)}
    assert max(bn for (_, bn), _ in tiles) == 128
    assert ((128, 128), 3) in tiles and ((256, 128), 3) not in tiles  # 512 threads: 128 registers each


def test_float8_rows_of_a_two_stage_loop_are_waited_for_each():
    """2 stages keep no batch in flight: each row's sum is the device function's own t[], waited
    for and added at once."""
    cfg = {"tile": (64, 128, 32, 64), "bk": 128, "stages": 2, "intrin": "wgmma", "vec_out": 4, "slices": 1}
    (k,) = tefuse.build(_fp8_dense(512, 256, 1024), "cuda:sm_90", db=ForcedConfig(cfg), cache=None).kernels
    src = k.source("cuda")
    assert "d[i] += t[i]" in src and "wait_group.sync.aligned 1" not in src and "rowsum" not in src
    report = ptxas_report(compile_to_ptx(src, "sm_90a"))
    assert not report.wgmma_serialized and report.spill_bytes == report.stack_bytes == 0, report.text


def test_a_fast_accumulation_product_sums_in_the_tensor_cores_accumulator():
    """fast_accum: no row summed apart, a batch left in flight as int8's (wait_group 1 with no row
    sums), registers as int8's, and the space's tiles as wide as int8's."""
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    w = rng.standard_normal((1024, 2048)).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    graph = b.build(b.op("dense", b.input("x", (4096, 2048), "uint8"), b.const(w, name="w"),
                         codes="float8_e4m3fn", fast_accum=True))
    (k,) = tefuse.build(graph, "cuda:sm_90").kernels
    src = k.source("cuda")
    assert "rowsum" not in src and not re.search(r"\bt\[", src)
    assert "wait_group.sync.aligned 1" in src and "_fast" in src
    ptx = compile_to_ptx(src, "sm_90a")
    assert re.search(r"\bwgmma\.mma_async\.sync\.aligned\.m64n\d+k32\.f32\.e4m3\.e4m3\b", ptx)
    report = ptxas_report(ptx)
    assert not report.wgmma_serialized and report.spill_bytes == report.stack_bytes == 0 and report.registers <= 128, report.text
    (group,) = fuse_graph(graph)
    info = lower_group(group).info
    cuda = make_target("cuda:sm_90")
    t = find_template(cuda, info.anchor_kind, info=info)[0]
    space = t.space(info, cuda)
    assert max(c["tile"][1] for c in space if space.admits(c.index)) > 128
