"""The tensor-core template without a GPU: its CUDA and PTX hold mma/wmma and cp.async, its
tiling and padding compute the right numbers (the same schedule, untensorized, run on llvm),
and it is the untuned choice for fp16/bf16 GEMMs and convs only."""
from __future__ import annotations

import re

import numpy as np
import pytest
import tvm
from tvm import s_tir

import tefuse
from tefuse.codegen.lower import lower_group
from tefuse.codegen.ptx import compile_to_ptx, cuda_kernel_names
from tefuse.fusion import fuse_graph
from tefuse.graph import GraphBuilder
from tefuse.plan.spec import parse_chain
from tefuse.schedules.cuda.tensorcore import TensorCoreGemm, pass_config
from tefuse.target import make_target

NAME = "tensorcore_gemm"


def _dense(m, n, k, dtype, batch=None):
    b = GraphBuilder()
    if batch:
        x, w = b.input("x", (batch, m, k), dtype), b.input("w", (batch, k, n), dtype)
        return b.build(b.matmul(x, w))
    x, w, bias = b.input("x", (m, k), dtype), b.input("w", (n, k), dtype), b.input("bias", (n,), dtype)
    return b.build(b.relu(b.bias_add(b.dense(x, w), bias, axis=1)))


CASES = {
    "conv_nchw_bn_relu": lambda: parse_chain("conv2d(k=32,r=3,pad=1)+bias+batch_norm+relu", (2, 16, 10, 10),
                                             "float16", "NCHW"),
    "conv_nhwc_residual": lambda: parse_chain("conv2d(k=32,r=3,pad=1)+bias+add+relu", (2, 10, 10, 16), "float16",
                                              "NHWC"),
    "conv_c3_7x7_s2": lambda: parse_chain("conv2d(k=16,r=7,stride=2,pad=3)+bias+relu", (1, 3, 30, 30), "float16",
                                          "NCHW"),
    "dense_awkward_197": lambda: _dense(197, 96, 72, "float16"),
    "batched_matmul": lambda: _dense(37, 40, 24, "float16", batch=3),
    "dense_bf16": lambda: _dense(49, 64, 48, "bfloat16"),
}


def _group(graph):
    (group,) = fuse_graph(graph)
    return group


@pytest.mark.parametrize("case", sorted(CASES))
def test_cuda_and_ptx_use_tensor_cores_and_cp_async(case):
    cg = tefuse.build(CASES[case](), "cuda")
    (k,) = cg.kernels
    assert k.template == NAME
    src = k.source("cuda")
    assert "mma" in src and "cp.async" in src
    ptx = compile_to_ptx(src)
    assert re.search(r"\bmma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.(f16\.f16|bf16\.bf16)\.f32", ptx), ptx[:400]
    assert "cp.async" in ptx


def test_wmma_variant_compiles_to_wmma():
    group = _group(CASES["dense_awkward_197"]())
    lowered = lower_group(group)
    target = make_target("cuda")
    t = TensorCoreGemm()
    space = t.space(lowered.info, target)
    cfg = space.from_values({**t.fallback(lowered.info, target, space).values, "intrin": "wmma"})
    sch = s_tir.Schedule(lowered.func)
    t.apply(sch, lowered.info, cfg, target)
    with target, tvm.transform.PassContext(opt_level=3, config=pass_config("wmma", target)):
        mod = tvm.compile(sch.mod, target=target).mod
    src = mod.imports[0].inspect_source()
    assert "wmma::mma_sync" in src
    assert "wmma.mma.sync" in compile_to_ptx(src)


def _rand(shape, dtype, rng):
    a = rng.standard_normal(shape).astype("float32")
    if dtype == "bfloat16":
        import ml_dtypes

        return a.astype(ml_dtypes.bfloat16)
    return a.astype(dtype)


@pytest.mark.parametrize("case", ["conv_nchw_bn_relu", "conv_nhwc_residual", "conv_c3_7x7_s2", "dense_awkward_197",
                                  "batched_matmul"])
def test_tiling_and_padding_compute_the_right_numbers_on_llvm(case):
    """The template's schedule with plain loops (llvm cannot run tensor-core intrinsics): every
    tile, pad and masked tail as on the GPU, compared with the CPU template's result."""
    graph = CASES[case]()
    group = _group(graph)
    lowered = lower_group(group)
    cuda = make_target("cuda")
    t = TensorCoreGemm()
    space = t.space(lowered.info, cuda)
    cfg = t.fallback(lowered.info, cuda, space)
    sch = s_tir.Schedule(lowered.func)
    llvm = make_target("llvm")
    t.apply(sch, lowered.info, cfg, llvm)
    lib = tvm.compile(sch.mod, target=llvm)
    rng = np.random.default_rng(0)
    args = [_rand(p.shape, p.dtype, rng) * (0.2 if "weight" in p.name else 1) for p in lowered.params]
    for p, a in zip(lowered.params, args):
        if p.name.endswith("_var"):
            a[...] = np.abs(a) + 0.5
    dev = tvm.cpu()
    outs = [tvm.runtime.empty(o.shape, o.dtype, dev) for o in group.outputs]
    lib["main"](*[tvm.runtime.tensor(a, dev) for a in args], *outs)
    want = tefuse.build(graph, "llvm").run(**{p.name: a for p, a in zip(lowered.params, args)})[0]
    got = outs[0].numpy().astype(np.float32)
    scale = np.abs(want.astype(np.float32)).max()
    assert np.abs(got - want.astype(np.float32)).max() <= 1e-2 * scale


def test_chosen_for_low_precision_only():
    def templates(graph):
        return [k.template for k in tefuse.build(graph, "cuda").kernels]

    assert templates(parse_chain("conv2d(k=32,r=3,pad=1)+relu", (1, 16, 8, 8), "float32", "NCHW")) != [NAME]
    assert templates(parse_chain("conv2d(k=32,r=3,pad=1)+relu", (1, 16, 8, 8), "float16", "NCHW")) == [NAME]
    assert templates(parse_chain("conv2d(k=16,r=3,pad=1,depthwise=1)+relu", (1, 16, 8, 8), "float16",
                                 "NCHW")) != [NAME]
    # an fp32 graph built with precision=fp16: casts in the prologue, tensor cores all the same
    g = parse_chain("conv2d(k=32,r=3,pad=1)+bias+relu", (1, 16, 8, 8), "float32", "NCHW")
    assert [k.template for k in tefuse.build(g, "cuda", precision="fp16").kernels] == [NAME]


def test_cli_builds_one_tensor_core_kernel_for_an_fp16_chain(capsys):
    """README/issue: `tefuse build CHAIN -i 16x64x56x56 --precision fp16 -t cuda -e cuda`."""
    from tefuse.cli import main

    rc = main(["build", "conv2d(k=64,r=3,pad=1)+bias+batch_norm+relu", "-i", "16x64x56x56", "--precision", "fp16",
               "-t", "cuda", "-e", "cuda", "--no-db", "--no-cache"])
    out = capsys.readouterr().out
    assert rc == 0
    assert len(cuda_kernel_names(out)) == 1  # definitions (TVM may also print a declaration)
    assert "mma.sync" in out and "cp.async" in out
