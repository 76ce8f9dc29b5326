"""int8 products accumulating int32 (a QDQ model's anchors, graph/qdq.py) on the mma.sync template
(Ampere and Ada; Hopper's take wgmma, test_wgmma_8bit.py) without a GPU: the CUDA source and its PTX hold mma.sync m16n8k32 s8 with int32 accumulators, and
the same schedule untensorized computes the exact integers on llvm (every tile, pad and masked tail
as on the GPU). Whether the fragment layouts are right is for a GPU run (tests/gpu/test_qdq_cuda.py)."""
from __future__ import annotations

import re

import numpy as np
import pytest
import tvm
from tvm import s_tir

import tefuse
from tefuse.codegen.lower import lower_group
from tefuse.codegen.ptx import compile_to_ptx
from tefuse.codegen.schedule import find_template
from tefuse.fusion import fuse_graph
from tefuse.graph import GraphBuilder
from tefuse.target import make_target


def int8_product(kind: str, rng):
    """An int8 product into int32, with a QDQ anchor's epilogue (zero-point share, scale)."""
    b = GraphBuilder()
    if kind == "conv2d":
        x = b.input("x", (1, 32, 10, 10), "int8")
        w = b.const(rng.integers(-128, 128, (48, 32, 3, 3)).astype(np.int8), name="w")
        y = b.op("conv2d", b.op("pad", x, pads=(0, 0, 1, 1, 0, 0, 1, 1), value=-3.0), w, out_dtype="int32")
        share, scale = (48, 1, 1), (48, 1, 1)
    elif kind == "conv2d_ohwi":  # NHWC with its weight [N, K] (graph/weights.py, int8=True)
        x = b.input("x", (2, 10, 10, 32), "int8")
        w = b.const(rng.integers(-128, 128, (48, 3, 3, 32)).astype(np.int8), name="w")
        y = b.op("conv2d", b.op("pad", x, pads=(0, 1, 1, 0, 0, 1, 1, 0), value=-3.0), w, layout="NHWC",
                 weight_layout="OHWI", out_dtype="int32")
        share, scale = (48,), (48,)
    else:
        x = b.input("x", (37, 96), "int8")  # rows not a tile's multiple: masked tails
        shape = (80, 96) if kind == "dense" else (96, 80)
        y = b.op(kind, x, b.const(rng.integers(-128, 128, shape).astype(np.int8), name="w"), out_dtype="int32")
        share, scale = (80,), (80,)
    y = b.op("sub", y, b.const(rng.integers(-999, 999, share).astype(np.int32), name="share"))
    y = b.op("mul", b.op("cast", y, dtype="float32"), b.const((rng.random(scale) * 1e-3).astype(np.float32), name="s"))
    return b.build(y)


KINDS = ["dense", "matmul", "conv2d", "conv2d_ohwi"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("arch", ["sm_80", "sm_89"])
def test_int8_products_compile_to_mma_sync_s8(kind, arch):
    cg = tefuse.build(int8_product(kind, np.random.default_rng(0)), f"cuda:{arch}")
    (k,) = cg.kernels
    assert k.template == "tensorcore_gemm"  # (Hopper's int8 products: test_wgmma_int8.py)
    src = k.source("cuda")
    assert "cp.async" in src
    ptx = compile_to_ptx(src, arch)
    assert re.search(r"\bmma\.sync\.aligned\.m16n8k32\.row\.col\.s32\.s8\.s8\.s32\b", ptx)
    assert re.search(r"\bldmatrix\.sync\.aligned\.m8n8\.x4(\.trans)?\.shared\.b16\b", ptx)


@pytest.mark.parametrize("arch", ["sm_80", "sm_89"])
def test_an_nhwc_int8_conv_reads_its_weight_nk_and_both_tiles_through_ldmatrix(arch):
    """An NHWC int8 conv with a constant HWIO weight, built for CUDA: the weight pass gives it
    OHWI, so both operand tiles are K-major and every fragment comes from ldmatrix; with [K, N]
    the B fragments were byte-wide shared loads (64 a thread each k step)."""
    cg = tefuse.build(int8_nhwc_conv(np.random.default_rng(0), -3.0), f"cuda:{arch}")
    (k,) = cg.kernels
    ptx = compile_to_ptx(k.source("cuda"), arch)
    assert re.search(r"\bldmatrix\.sync\.aligned\.m8n8\.x4\.shared\.b16\b", ptx)
    assert not re.search(r"\bld\.shared\.[us]8\b", ptx)
    assert re.search(r"\bmma\.sync\.aligned\.m16n8k32\.row\.col\.s32\.s8\.s8\.s32\b", ptx)


@pytest.mark.parametrize("kind", KINDS)
def test_int8_tiling_and_padding_compute_the_exact_integers_on_llvm(kind):
    graph = int8_product(kind, np.random.default_rng(1))
    (group,) = fuse_graph(graph)
    lowered = lower_group(group)
    cuda = make_target("cuda:sm_80")
    t = find_template(cuda, lowered.info.anchor_kind, info=lowered.info)[0]
    assert t.name == "tensorcore_gemm" and lowered.info.dtype == "int8"
    cfg = t.fallback(lowered.info, cuda, t.space(lowered.info, cuda))
    sch = s_tir.Schedule(lowered.func)
    llvm = make_target("llvm")
    t.apply(sch, lowered.info, cfg, llvm)
    lib = tvm.compile(sch.mod, target=llvm)
    rng = np.random.default_rng(2)
    args = {p.name: p.value if p.value is not None else rng.integers(-128, 128, p.shape).astype(np.int8)
            for p in lowered.params}  # the data at random, the constants as they are
    dev = tvm.cpu()
    (out,) = group.outputs
    got = tvm.runtime.empty(out.shape, out.dtype, dev)
    lib["main"](*[tvm.runtime.tensor(np.asarray(args[p.name]), dev) for p in lowered.params], got)
    want = tefuse.build(graph, "llvm").run(x=args["x"])[0]
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("kind", KINDS)
def test_int8_shared_tiles_rows_start_16_byte_aligned(kind):
    """ldmatrix reads 16-byte rows: an int8 operand tile's padded row stride is a multiple of
    16 bytes (32 + 8 int8 elements, 40 bytes, faulted with a misaligned address on the GPU)."""
    from tefuse.schedules.cuda.gemm.tiles import aligned_row, row_pad

    assert row_pad(8, 1) == 16 and row_pad(8, 2) == 8 and row_pad(0, 1) == 0
    cg = tefuse.build(int8_product(kind, np.random.default_rng(0)), "cuda:sm_89")
    src = cg.kernels[0].source("cuda")
    # the tile copies' shared addresses: plain stores, or cp.async's destination (its first offset)
    stores = [ln for ln in src.splitlines() if "buf_dyn_shmem_ptr)" in ln and "= condval" in ln]
    stores += re.findall(r"ptx_cp_async\w*\(buf_dyn_shmem_ptr, (.*?), in_\w+_ptr, ", src)
    strides = {int(s) for ln in stores for s in re.findall(r"threadIdx\.[xy]\)(?: >> \d+\))? \* (\d+)\)", ln)}
    assert strides and all(s % 16 == 0 for s in strides), strides
    assert all(aligned_row(bk, row_pad(8, 1)) % 16 == 0 for bk in (32, 64, 128))


def int8_nhwc_conv(rng, pad_value: float):
    """An NHWC int8 3x3 conv (a calibrated model's layout) padded with `pad_value` (a uint8 QDQ
    model's zero point read as int8 is -128), over 200 output pixels: masked tail rows too."""
    b = GraphBuilder()
    x = b.input("x", (2, 10, 10, 32), "int8")
    w = b.const(rng.integers(-128, 128, (3, 3, 32, 48)).astype(np.int8), name="w")
    y = b.op("conv2d", b.op("pad", x, pads=(0, 1, 1, 0, 0, 1, 1, 0), value=pad_value), w, layout="NHWC",
             out_dtype="int32")
    y = b.op("mul", b.op("cast", y, dtype="float32"), b.const((rng.random(48) * 1e-3).astype(np.float32), name="s"))
    return b.build(y)


COPIES = {"dense": lambda rng: int8_product("dense", rng), "matmul": lambda rng: int8_product("matmul", rng),
          "conv-nhwc": lambda rng: int8_nhwc_conv(rng, 0.0), "conv-nhwc-fill": lambda rng: int8_nhwc_conv(rng, -128.0)}


@pytest.mark.parametrize("kind", COPIES)
@pytest.mark.parametrize("arch", ["sm_80", "sm_89"])
def test_int8_operand_tiles_copy_16_bytes_a_thread_on_cp_async(kind, arch):
    """Both operand tiles (masked tails, a conv's padding: passes/int_tile_copies.py) move on
    cp.async.cg 16, as fp16's do, and nvcc compiles the source (no int8x16 constant printed as
    make_int4 of chars: passes/byte_vectors.py)."""
    cg = tefuse.build(COPIES[kind](np.random.default_rng(0)), f"cuda:{arch}")
    (k,) = cg.kernels
    assert k.template == "tensorcore_gemm"
    ptx = compile_to_ptx(k.source("cuda"), arch)
    sizes = re.findall(r"\bcp\.async\.c[ag]\.shared\.global(?:\.\w+)* \[[^]]*\], \[[^]]*\], (\d+)", ptx)
    assert len(sizes) >= 2 and set(sizes) == {"16"}, sorted(set(sizes))  # x's tile and w's
    assert not re.search(r"\bld\.global(?:\.nc)?\.[us]8\b", ptx)  # no operand read a byte at a time
