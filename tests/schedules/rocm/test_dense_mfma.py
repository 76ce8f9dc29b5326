"""The ROCm matrix-core GEMM template (schedules/rocm/dense_mfma.py) without AMD hardware:
float16 and float32 dense + bias + ReLU chains are one kernel of v_mfma instructions in real
gfx942/gfx90a code objects; awkward shapes (M = 1, M = 197, K = 72, a batched matmul) are
padded and masked and compute the right numbers (the same schedule untensorized, on llvm);
untuned builds do not pick it unless asked to."""
from __future__ import annotations

import re

import numpy as np
import pytest

from tefuse.graph import GraphBuilder
from tefuse.schedules.rocm.dense_mfma import DenseMfma
from tefuse.schedules.rocm.mfma_gemm import lds_bytes, padded_tiles
from tefuse.options import BuildOptions
from tefuse.target import device_caps, make_target
from tefuse.tune.task import extract_tasks
from tests.schedules.gpu import test_dense as cuda_dense
from tests.schedules.rocm.test_conv2d_mfma import check_on_llvm, mfma_count, steps, task_names, with_template

NAME = "dense_mfma"


def dense_chain(m, n, k, dtype, residual=False, seed=0):
    """x[M, K] @ w[N, K]^T + bias (+ a residual input), ReLU; weights and bias constants."""
    rng = np.random.default_rng(seed)
    b = GraphBuilder()
    x = b.input("x", (m, k), dtype)
    w = b.const((rng.standard_normal((n, k)) * 0.2).astype(dtype), name="w")
    y = b.bias_add(b.dense(x, w), b.const(rng.standard_normal(n).astype(dtype), name="bias"), axis=1)
    if residual:
        y = b.add(y, b.input("res", (m, n), dtype))
    return b.build(b.relu(y))


def batched_matmul(batch, m, n, k, dtype):
    b = GraphBuilder()
    x, w = b.input("x", (batch, m, k), dtype), b.input("w", (batch, k, n), dtype)
    return b.build(b.matmul(x, w))


@pytest.mark.parametrize("arch", ["gfx942", "gfx90a"])
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_dense_bias_relu_is_one_kernel_on_matrix_cores(toolchain, objdump, tmp_path, arch, dtype):
    cg, cfg = with_template(dense_chain(64, 256, 512, dtype), arch, tmp_path, NAME, unroll=0)
    assert cg.num_kernels == 1 and cg.kernels[0].template == NAME
    assert mfma_count(cg, arch, objdump, dtype) == steps(cfg, dtype)


def test_several_wavefronts_fragments_and_a_padded_tail(toolchain, objdump, tmp_path):
    cg, cfg = with_template(dense_chain(197, 96, 72, "float16", residual=True), "gfx942", tmp_path, NAME,
                            tile_m=(4, 2, 2), tile_n=(1, 2, 4), tile_k=(3, 2), unroll=0)
    # 2x4 fragments, 2 steps a fill; LLVM unrolls the 3 fills or not
    assert cg.num_kernels == 1 and mfma_count(cg, "gfx942", objdump, "float16") in (2 * 4 * 2, 2 * 4 * 2 * 3)


@pytest.mark.parametrize("graph,values", [
    (lambda: dense_chain(197, 96, 72, "float16", residual=True), {"tile_m": (4, 2, 2), "tile_n": (1, 2, 4)}),
    (lambda: dense_chain(1, 96, 40, "float32"), {}),  # M = 1: 15 padded rows, never stored
    (lambda: dense_chain(50, 40, 200, "float32"), {"tile_m": (1, 2, 2), "tile_k": (7, 2)}),
    (lambda: batched_matmul(3, 37, 40, 24, "float32"), {}),  # the anchor is the output: a copy-out
    (lambda: batched_matmul(2, 64, 48, 64, "float16"), {"tile_m": (1, 2, 2)}),
    (lambda: cuda_dense.dense_chain(m=2, k=72, n=40, prologue="flatten"), {}),  # ResNet's flatten -> fc
    (lambda: cuda_dense.dense_chain(m=20, k=40, n=24, dtype="float16", prologue="scale"), {}),
    (lambda: cuda_dense.batched_matmul(batch=(2, 3), m=8, k=24, n=10), {}),  # b broadcast over the batch
])
def test_the_schedule_computes_the_right_numbers_on_llvm(graph, values):
    check_on_llvm(graph(), DenseMfma(), **values)


def test_what_the_template_takes_and_that_untuned_builds_keep_the_others(monkeypatch):
    t = make_target("rocm:gfx942")
    for g in (dense_chain(64, 256, 512, "float16"), dense_chain(1, 96, 40, "float32"),
              batched_matmul(3, 37, 40, 24, "float32")):
        (task,) = extract_tasks(g, t)
        assert NAME in task_names(task) and task_names(task)[0] != NAME  # tuned, but not the fallback
    assert NAME not in task_names(extract_tasks(dense_chain(64, 256, 512, "float16"), "cuda")[0])
    assert NAME not in task_names(extract_tasks(dense_chain(64, 256, 512, "bfloat16"), t)[0])
    g = dense_chain(64, 256, 512, "float32")
    assert task_names(extract_tasks(g, t)[0])[0] != NAME  # not opted in
    opted = BuildOptions(prefer_mfma=True)  # the untuned choice on matrix-core archs only
    assert task_names(extract_tasks(g, t, options=opted)[0])[0] == NAME
    assert task_names(extract_tasks(g, "rocm:gfx1100", options=opted)[0])[0] != NAME


def test_padding_rounds_to_whole_workgroup_tiles():
    assert [padded_tiles(e, 4) for e in (1, 16, 40, 64, 72, 197, 4096)] == [1, 1, 3, 4, 8, 16, 256]
    assert [padded_tiles(e, 2) for e in (24, 40, 72, 200)] == [2, 4, 6, 14]


@pytest.mark.parametrize("m,n,k,dtype", [(1, 1000, 2048, "float32"), (197, 768, 3072, "float16"),
                                         (4096, 4096, 4096, "float32")])
def test_fallback_fits_a_workgroup_and_the_lds(m, n, k, dtype):
    t = make_target("rocm:gfx942")
    task = extract_tasks(dense_chain(m, n, k, dtype), t)[0]
    d = DenseMfma()
    cfg = d.fallback(task.info, t, d.space(task.info, t))
    lim = device_caps(t)
    assert cfg["tile_m"][1] * cfg["tile_n"][1] * lim.warp_size <= lim.max_threads_per_block
    lds = lds_bytes(cfg["tile_m"][1] * cfg["tile_m"][2], cfg["tile_n"][1] * cfg["tile_n"][2], cfg["tile_k"][1],
                    2 if dtype == "float16" else 4)
    assert lds <= lim.max_shared_memory_per_block == 65536


def test_cli_shows_mfma_for_an_onnx_gemm_when_opted_in(toolchain, capsys, monkeypatch, tmp_path):
    """Gemm(x[64, 512], w[256, 512]^T, b) + Relu, the way `tefuse build model.onnx` reads it
    (chain specs are conv chains)."""
    from tefuse.cli import main
    from tests.frontend.test_onnx import make_model
    from onnx import helper, save

    rng = np.random.default_rng(0)
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1), helper.make_node("Relu", ["y"], ["z"])]
    model = make_model(nodes, {"x": (64, 512)}, {"z": None},
                       {"w": rng.standard_normal((256, 512)).astype("float32"), "b": np.zeros(256, "float32")})
    save(model, tmp_path / "gemm.onnx")
    args = ["build", str(tmp_path / "gemm.onnx"), "-t", "rocm:gfx942", "--no-db", "--no-cache", "-e", "asm"]
    assert main(args) == 0
    assert "v_mfma" not in capsys.readouterr().out  # untuned: the CUDA-family GEMM
    monkeypatch.setenv("TEFUSE_ROCM_MFMA", "1")  # the CLI reads it into BuildOptions
    assert main(args) == 0
    asm = capsys.readouterr().out
    assert len(re.findall(r"^main_kernel:", asm, re.M)) == 1
    assert re.search(r"^\s+v_mfma_f32_16x16x4_f32 ", asm, re.M), asm[:2000]
