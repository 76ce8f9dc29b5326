"""int8 products (a QDQ model's anchors, graph/qdq.py) on Hopper's wgmma without a GPU: on sm_90
the wgmma template takes them untuned, its PTX holds wgmma.mma_async m64nNk32 s8 into s32 with
both operand tiles on 16-byte cp.async, and the same schedule untensorized (128-deep swizzled
tiles, padded tails, a conv's padding filled with the zero point) computes the exact integers on
llvm. Whether the device function's accumulator layout holds is for a GPU run
(tests/gpu/test_qdq_cuda_gpu.py)."""
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
from tefuse.schedules.cuda.intrin.wgmma import bk_of
from tefuse.target import make_target

from .test_mma_int8 import _int8_nhwc_conv, _int8_product

PRODUCTS = {"dense": lambda rng: _int8_product("dense", rng), "matmul": lambda rng: _int8_product("matmul", rng),
            "conv-ohwi": lambda rng: _int8_product("conv2d_ohwi", rng),
            "conv-nhwc-fill": lambda rng: _int8_nhwc_conv(rng, -128.0)}


@pytest.mark.parametrize("kind", PRODUCTS)
def test_int8_products_take_wgmma_s8_on_hopper(kind):
    cg = tefuse.build(PRODUCTS[kind](np.random.default_rng(0)), "cuda:sm_90")
    (k,) = cg.kernels
    assert k.template == "wgmma_gemm"
    ptx = compile_to_ptx(k.source("cuda"), "sm_90a")
    assert re.search(r"\bwgmma\.mma_async\.sync\.aligned\.m64n\d+k32\.s32\.s8\.s8\b", ptx)
    assert not re.search(r"\bmma\.sync\b", ptx)
    sizes = re.findall(r"\bcp\.async\.c[ag]\.shared\.global(?:\.\w+)* \[[^]]*\], \[[^]]*\], (\d+)", ptx)
    assert len(sizes) >= 2 and set(sizes) == {"16"}, sorted(set(sizes))
    assert not re.search(r"\bld\.global(?:\.nc)?\.[us]8\b", ptx)


def test_int8_space_is_one_128_byte_row_deep_and_unsliced():
    graph = _int8_product("dense", np.random.default_rng(0))
    (group,) = fuse_graph(graph)
    info = lower_group(group).info
    cuda = make_target("cuda:sm_90")
    t = find_template(cuda, info.anchor_kind, info=info)[0]
    assert t.name == "wgmma_gemm"
    space = t.space(info, cuda)
    admitted = [c for c in space if space.admits(c.index)]
    assert admitted and {c["bk"] for c in admitted} == {bk_of("int8")} == {128}
    assert {c["slices"] for c in admitted} == {1}


@pytest.mark.parametrize("kind", PRODUCTS)
def test_int8_wgmma_tiling_computes_the_exact_integers_on_llvm(kind):
    """The group as a sm_90 build prepares it (weights [N, K]), scheduled for llvm."""
    graph = PRODUCTS[kind](np.random.default_rng(1))
    (k,) = tefuse.build(graph, "cuda:sm_90").kernels
    group = k.group
    lowered = lower_group(group)
    cuda = make_target("cuda:sm_90")
    t = find_template(cuda, lowered.info.anchor_kind, info=lowered.info)[0]
    assert t.name == "wgmma_gemm" and lowered.info.dtype == "int8"
    cfg = t.fallback(lowered.info, cuda, t.space(lowered.info, cuda))
    assert cfg["bk"] == 128
    sch = s_tir.Schedule(lowered.func)
    llvm = make_target("llvm")
    t.apply(sch, lowered.info, cfg, llvm)
    # both operand tiles in the 128-byte swizzle: atoms of 8 rows x 8 chunks x 16 values
    assert len(re.findall(r"alloc_buffer\(\(\d+, \d+, \d+, 8, 8, 16\), \"int8\"", sch.mod.script())) == 2
    lib = tvm.compile(sch.mod, target=llvm)
    rng = np.random.default_rng(2)
    args = {p.name: p.value if p.value is not None else rng.integers(-128, 128, p.shape).astype(np.int8)
            for p in lowered.params}
    dev = tvm.cpu()
    (out,) = group.outputs
    got = tvm.runtime.empty(out.shape, out.dtype, dev)
    lib["main"](*[tvm.runtime.tensor(np.asarray(args[p.name]), dev) for p in lowered.params], got)
    want = tefuse.build(graph, "llvm").run(x=args["x"])[0]
    np.testing.assert_array_equal(got.numpy(), want)
