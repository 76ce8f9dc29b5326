"""The CUDA dense template, without a GPU: dense + bias + relu chains (batch 1 and larger,
awkward sizes, a flatten or scale prologue, fp16, batched matmul) build to exactly one
kernel with shared-memory tiles, a seeded sample of each space applies and generates code,
every point of the space respects the thread and shared-memory limits, and the fallback
compiles to sm_90 PTX."""
from __future__ import annotations

import math
import random
import re
import shutil

import numpy as np
import pytest

import tefuse.schedules as schedules
import tefuse
from tefuse import GraphBuilder
from tefuse.codegen.compile import compile_module
from tefuse.codegen.ptx import compile_to_ptx, cuda_kernel_names, ptx_entries
from tefuse.codegen.schedule import ScheduleChoice, apply_schedule
from tefuse.tune.task import Task, as_tasks
from tefuse.schedules.gpu.dense import gemm_dims, padded, shared_bytes, threads_per_block
from tests.codegen.test_cuda_codegen import kernel_params

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


def dense_chain(m=1, k=2048, n=1000, dtype="float32", prologue=None, epilogue=True, seed=0):
    """[flatten | scale ->] dense(x, W) [+ bias -> relu], W and bias constants (W scaled by
    1/sqrt(k) so outputs stay O(1) for the numerical checks)."""
    rng = np.random.default_rng(seed)
    b = GraphBuilder()
    if prologue == "flatten":  # ResNet's pool -> flatten -> fc
        x = b.flatten(b.input("x", (m, k, 1, 1), dtype), name="flat")
    else:
        x = b.input("x", (m, k), dtype)
        if prologue == "scale":
            x = b.mul(x, b.const(np.asarray(0.5, dtype)), name="scaled")
    w = b.const((rng.standard_normal((n, k)) / np.sqrt(k)).astype(dtype), name="w")
    y = b.dense(x, w, name="fc")
    if epilogue:
        y = b.relu(b.bias_add(y, b.const(rng.standard_normal(n).astype(dtype), name="bias"), name="biased"),
                   name="out")
    return b.build(y)


def batched_matmul(batch=(2, 3), m=8, k=24, n=10, dtype="float32", seed=0):
    """a[..., m, k] @ b[k, n] (numpy matmul; b broadcast over the batch) + relu."""
    rng = np.random.default_rng(seed)
    b = GraphBuilder()
    a = b.input("a", (*batch, m, k), dtype)
    w = b.const((rng.standard_normal((k, n)) / np.sqrt(k)).astype(dtype), name="w")
    return b.build(b.relu(b.op("matmul", a, w, name="mm"), name="out"))


CHAINS = [
    pytest.param(dict(m=1, k=2048, n=1000, prologue="flatten"), id="resnet50_fc_batch1"),
    pytest.param(dict(m=64, k=4096, n=4096), id="batch64_4096"),
    pytest.param(dict(m=3, k=1000, n=100, prologue="scale"), id="batch3_odd"),
    pytest.param(dict(m=32, k=2048, n=1000), id="batch32_fc"),
    pytest.param(dict(m=16, k=512, n=256, dtype="float16"), id="fp16_batch16"),
]


def task_of(graph) -> Task:
    (task,) = as_tasks(graph, "cuda")
    assert task.info.anchor_kind == "dense"
    return task


def cuda_source(task: Task, cfg) -> str:
    mod = apply_schedule(task.lowered, task.target, ScheduleChoice(task.template("cuda_dense"), cfg, "test"))
    module = compile_module(mod, task.target)
    (dev,) = [m for m in module.imports if m.kind == "cuda"]
    return dev.inspect_source()


def test_dense_has_its_own_cuda_template():
    # CUDA looks at its own family (tensor cores) first, then the GPU family; ROCm at its own
    # (MFMA), never the CUDA-only tensor-core template
    assert [t.name for t in schedules.get_templates("cuda", "dense")] == ["tensorcore_gemm", "wgmma_gemm", "cuda_dense"]
    assert [t.name for t in schedules.get_templates("rocm", "dense")] == ["dense_mfma", "cuda_dense"]


@pytest.mark.parametrize("kw", CHAINS)
def test_dense_chain_is_one_kernel_with_shared_tiles(kw):
    g = dense_chain(**kw)
    cg = tefuse.build(g, "cuda")
    # fp16 GEMMs go to tensor cores (tests/schedules/cuda/gemm/test_mma.py); the rest to cuda_dense
    expected = ("tensorcore_gemm", "wgmma_gemm") if kw.get("dtype") == "float16" else ("cuda_dense",)
    assert cg.num_kernels == 1 and cg.kernels[0].template in expected
    src = cg.kernels[0].source("cuda")
    (name,) = cuda_kernel_names(src)
    # graph input, weight, bias and output only: the dense result never goes to global memory
    assert {p for _, p in kernel_params(src, name)} == {"in_x_ptr", "in_w_ptr", "in_bias_ptr", "out_out_ptr"}
    assert "__shared__" in src and "__syncthreads()" in src


def test_batched_matmul_is_one_kernel():
    cg = tefuse.build(batched_matmul(), "cuda")
    assert cg.num_kernels == 1 and cg.kernels[0].template == "cuda_dense"
    src = cg.source("cuda")
    assert len(cuda_kernel_names(src)) == 1 and "__shared__" in src


@pytest.mark.parametrize("epilogue", [False, True], ids=["bare", "relu"])
def test_vector_dot_product_builds(epilogue):
    """1-D @ 1-D matmul: a 0-d output, whose block has no loop of its own."""
    b = GraphBuilder()
    y = b.op("matmul", b.input("a", (24,)), b.input("w", (24,)), name="mm")
    cg = tefuse.build(b.build(b.relu(y, name="out") if epilogue else y), "cuda")
    assert cg.num_kernels == 1 and cg.kernels[0].template == "cuda_dense"
    assert len(cuda_kernel_names(cg.source("cuda"))) == 1


def test_gemm_dims_of_dense_and_matmul():
    assert gemm_dims(task_of(dense_chain(m=3, k=1000, n=100)).info) == (1, 3, 100, 1000)
    assert gemm_dims(task_of(dense_chain(m=1, prologue="flatten")).info) == (1, 1, 1000, 2048)
    assert gemm_dims(task_of(batched_matmul()).info) == (6, 8, 10, 24)
    assert gemm_dims(task_of(batched_matmul(batch=(197,), m=1, k=96, n=288)).info) == (1, 197, 288, 96)


@pytest.mark.parametrize("kw", [
    dict(m=1, k=2048, n=1000),
    dict(m=64, k=4096, n=4096),
    dict(m=3, k=1000, n=100),
    dict(m=16, k=512, n=256, dtype="float16"),
    dict(m=111, k=90, n=256),
])
def test_every_config_fits_thread_and_shared_memory_limits(kw):
    task = task_of(dense_chain(**kw))
    space = task.space("cuda_dense")
    itemsize = 2 if kw.get("dtype") == "float16" else 4
    n = len(space)
    idx = range(n) if n <= 5000 else random.Random(0).sample(range(n), 5000)
    for i in idx:
        cfg = space.get(i)
        assert threads_per_block(cfg) <= 1024, cfg.values
        assert shared_bytes(cfg, itemsize) <= 48 * 1024, cfg.values


SHARED = re.compile(r"__shared__\s+(?:alignas\(\d+\)\s+)?(float|half)\s+\w+\[(\d+)\]")


def test_awkward_extents_are_tiled_as_padded():
    """197 (ViT's tokens, a prime) would leave 1-row tiles: it is tiled as 200, the tail masked."""
    assert [padded(e) for e in (197, 196, 111, 3, 1000, 2048, 50, 74)] == [200, 196, 112, 3, 1000, 2048, 50, 80]
    task = task_of(dense_chain(m=197, k=768, n=2304))
    fb = task.fallback("cuda_dense")
    assert math.prod(fb["tile_m"]) == 200 and fb["tile_m"][2] * fb["tile_m"][3] >= 8
    src = cuda_source(task, fb)
    assert "< 197)" in src  # the padded rows are masked


def test_k_thread_reduction_buffer_counts_against_shared_memory():
    """9 K threads (no power of two) reduce through a shared buffer of one float per thread,
    next to the biggest tiles of the space: the whole must stay within 48 KiB."""
    task = task_of(dense_chain(m=3, k=90, n=256, epilogue=False))
    space = task.space("cuda_dense")
    tile_k = max((c for c in next(k.candidates for k in space.knobs if k.name == "tile_k") if c[2] == 9),
                 key=lambda c: c[1])
    cfg = space.from_values(dict(tile_m=(1, 1, 3, 1), tile_n=(16, 1, 8, 2), tile_k=tile_k, unroll=0,
                                 unroll_explicit=1))
    src = cuda_source(task, cfg)
    assert "red_buf" in src
    total = sum((4 if t == "float" else 2) * int(n) for t, n in SHARED.findall(src))
    assert total <= shared_bytes(cfg, 4) <= 48 * 1024, (cfg.values, total)


def test_shared_alloc_bytes_counts_padded_tiles():
    """schedules.common.shared_alloc_bytes reads the row-padded (storage_align) tiles too."""
    from tvm import s_tir

    from tefuse.schedules.common import shared_alloc_bytes

    task = task_of(dense_chain(m=64, k=1024, n=512, epilogue=False))
    cfg = task.fallback("cuda_dense")
    sch = s_tir.Schedule(task.func)
    task.template("cuda_dense").apply(sch, task.info, cfg, task.target)
    total = sum((4 if t == "float" else 2) * int(n) for t, n in SHARED.findall(cuda_source(task, cfg)))
    assert shared_alloc_bytes(sch.mod) == total > 0


def test_fallback_batch1_threads_over_k_and_n():
    """Batch 1: a warp of K threads per output and enough blocks to fill the GPU; batch 64:
    the classic register-tiled GEMM."""
    fb = task_of(dense_chain(m=1, k=2048, n=1000)).fallback()
    assert fb["tile_k"][2] == 32
    assert 64 <= threads_per_block(fb) <= 512
    assert fb["tile_n"][0] >= 100  # blocks
    fb = task_of(dense_chain(m=64, k=4096, n=4096)).fallback()
    assert fb["tile_k"][2] == 1
    assert fb["tile_m"][3] * fb["tile_n"][3] >= 8  # outputs per thread
    assert fb["tile_m"][0] * fb["tile_n"][0] >= 128


SAMPLED = [
    pytest.param(lambda: dense_chain(m=1, k=2048, n=1000, prologue="flatten"), id="batch1_fc"),
    pytest.param(lambda: dense_chain(m=24, k=300, n=250, prologue="scale"), id="batch24_odd"),
    pytest.param(lambda: dense_chain(m=8, k=256, n=96, dtype="float16"), id="fp16_batch8"),
    pytest.param(lambda: batched_matmul(), id="batched_matmul"),
    pytest.param(lambda: dense_chain(m=197, k=197, n=197), id="prime_197"),
    pytest.param(lambda: dense_chain(m=1, k=197, n=100), id="gemv_prime_k"),
    pytest.param(lambda: batched_matmul(batch=(12,), m=197, k=64, n=197), id="attention_scores"),
    pytest.param(lambda: batched_matmul(batch=(197,), m=1, k=96, n=288), id="seq_first_qkv"),
]


@pytest.mark.parametrize("make", SAMPLED)
def test_sampled_configs_apply_and_generate_cuda(make):
    task = task_of(make())
    space = task.space("cuda_dense")
    rng = random.Random(20)
    for i in rng.sample(range(len(space)), min(10, len(space))):
        src = cuda_source(task, space.get(i))
        assert len(cuda_kernel_names(src)) == 1, space.get(i).values
        assert "__shared__" in src, space.get(i).values


@needs_nvcc
@pytest.mark.parametrize("kw", [dict(m=1, k=2048, n=1000, prologue="flatten"), dict(m=64, k=1024, n=512)])
def test_fallback_compiles_to_sm90_ptx(kw):
    task = task_of(dense_chain(**kw))
    src = cuda_source(task, task.fallback("cuda_dense"))
    ptx = compile_to_ptx(src, "sm_90")
    assert re.search(r"^\.target\s+sm_90\b", ptx, re.M), ptx[:400]
    assert ptx_entries(ptx) == cuda_kernel_names(src)


def _window_reverse_projection():
    """Swin's attention output projection: 16 windows of 49 tokens, a Linear with bias, then the
    window reverse (reshape, transpose, reshape) back to the 28x28 image as its epilogue."""
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x = b.input("x", (16, 49, 192))
    y = b.add(b.matmul(x, b.const((rng.standard_normal((192, 192)) / 14).astype("f4"))),
              b.const(rng.standard_normal(192).astype("f4")))
    y = b.reshape(y, shape=(1, 4, 4, 7, 7, 192))
    y = b.reshape(b.transpose(y, axes=[0, 1, 3, 2, 4, 5]), shape=(1, 28, 28, 192))
    return b.build(y)


def test_no_padded_tile_under_a_reshaping_epilogue():
    """Tiles that pad the 49 rows would map a window's padding rows onto the next window's first
    row, which the epilogue then writes from accumulators never computed (a wrong Swin-T on the
    GPU): every config applied divides the rows, or the epilogue is a kernel of its own."""
    from tefuse.schedules.gpu.dense import aliases_padding

    (task,) = [t for t in as_tasks(_window_reverse_projection(), "cuda:sm_90") if "matmul" in t.name]
    space = task.spaces["cuda_dense"]
    padded_cfgs = [c for c in (space.get(i) for i in range(0, len(space), max(1, len(space) // 200)))
                   if math.prod(c["tile_m"][1:]) and 49 % math.prod(c["tile_m"][1:])]
    assert padded_cfgs and all(aliases_padding(task.info, c) for c in padded_cfgs)
    cg = tefuse.build(_window_reverse_projection(), "cuda:sm_90")
    for k in cg.kernels:
        if k.template == "cuda_dense" and any(n.op == "transpose" for n in k.group.nodes):
            cfg = task.spaces["cuda_dense"].get(k.config_index)
            assert 49 % math.prod(cfg["tile_m"][1:]) == 0
