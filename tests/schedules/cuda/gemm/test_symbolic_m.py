"""The tensor-core GEMM templates over a symbolic M (a dense's rows N*S, an NHWC conv's N*H*W with a
symbolic batch), without a GPU: one CUDA build takes the dim as a kernel argument, its tiles,
shared and fragment buffers all of constant size (the pad to whole block tiles), on wgmma for
sm_90 and mma.sync for sm_80; the same schedule untensorized on llvm computes numpy's values at
several sizes; exact builds keep their configs and checks. (On a GPU: tests/gpu/test_dynamic_gemm_gpu.py.)"""
from __future__ import annotations

import math
import re
import shutil

import numpy as np
import pytest
import tvm
from tvm import s_tir

import tefuse
from tefuse.codegen.compile import schedule_kernel
from tefuse.codegen.lower import lower_group
from tefuse.codegen.ptx import compile_to_ptx
from tefuse.codegen.schedule import choose_schedule, find_template, kernel_spec
from tefuse.fusion import fuse_graph
from tefuse.graph import GraphBuilder
from tefuse.ops.value import dim_hints
from tefuse.schedules.common import compacted_script, sized_at_run_time
from tefuse.target import make_target

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
RANGES = {"N": "1:8:32"}
OPT = {"N": 8}


def dense(rows="N", k=72, n=96):
    """x [rows, k] @ w^T + bias, ReLU: M is the rows, K and N not multiples of the tiles."""
    b = GraphBuilder()
    x, w, bias = b.input("x", (rows, k), "float16"), b.input("w", (n, k), "float16"), b.input("bias", (n,), "float16")
    return b.build(b.relu(b.bias_add(b.dense(x, w), bias, axis=1)))


def conv(batch="N", r=3, c=32, k=48, hw=7):
    """An NHWC conv with OHWI weights (Hopper's wgmma reads them as [N, K]), ReLU: M = batch*hw*hw
    (49 rows an image: never whole tiles)."""
    b = GraphBuilder()
    x, w = b.input("x", (batch, hw, hw, c), "float16"), b.input("w", (k, r, r, c), "float16")
    return b.build(b.relu(b.conv2d(x, w, padding=r // 2, layout="NHWC", weight_layout="OHWI")))


def scores(seq="N", heads=2, d=64):
    """Attention's q @ k^T over a symbolic sequence: M and N both symbolic, B read through a transpose."""
    b = GraphBuilder()
    q, k = b.input("q", (heads, seq, d), "float16"), b.input("k", (heads, seq, d), "float16")
    return b.build(b.matmul(q, b.transpose(k, axes=(0, 2, 1))))


def context(seq="N", heads=2, d=64):
    """Attention's p @ v over a symbolic sequence: M and the reduction K symbolic."""
    b = GraphBuilder()
    p, v = b.input("p", (heads, seq, seq), "float16"), b.input("v", (heads, seq, d), "float16")
    return b.build(b.matmul(p, v))


def tokens(seq="N", batch=2, k=64, n=96):
    """A Linear over [batch, seq, k] tokens with a GELU epilogue: its rows batch*seq are written
    back as [batch, seq, n] (rows // seq, rows % seq), and erf is computed a lane at a time."""
    b = GraphBuilder()
    x, w, bias = b.input("x", (batch, seq, k), "float16"), b.input("w", (n, k), "float16"), b.input("bias", (n,), "float16")
    return b.build(b.gelu(b.bias_add(b.matmul(x, w, trans_b=True), bias, axis=2)))


def _gelu(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def _conv_reference(x, w):
    r = w.shape[1]
    xp = np.pad(x, ((0, 0), (r // 2, r // 2), (r // 2, r // 2), (0, 0)))
    windows = np.lib.stride_tricks.sliding_window_view(xp, (r, r), axis=(1, 2))  # n, y, x, c, ry, rx
    return np.maximum(np.einsum("nyxcij,kijc->nyxk", windows, w), 0)


CASES = {"dense": dense, "conv3x3": lambda batch="N": conv(batch, 3), "conv1x1": lambda batch="N": conv(batch, 1)}
# what numpy computes from the float32 values of the inputs
REFERENCE = {"dense": lambda x, w, bias: np.maximum(x @ w.T + bias, 0), "conv3x3": _conv_reference,
             "conv1x1": _conv_reference, "scores": lambda q, k: q @ k.transpose(0, 2, 1),
             "context": lambda p, v: p @ v, "tokens": lambda x, w, bias: _gelu(x @ w.T + bias)}
NUMERIC_CASES = {**CASES, "scores": scores, "context": context, "tokens": tokens}


def _lowered(graph):
    with dim_hints(OPT):
        (group,) = fuse_graph(graph)
        return lower_group(group)


@needs_nvcc
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_one_cuda_build_takes_m_at_run_time_on_tensor_cores(case, arch):
    (k,) = tefuse.build(CASES[case](), f"cuda:{arch}", dynamic=RANGES).kernels
    assert k.template == ("wgmma_gemm" if arch == "sm_90" else "tensorcore_gemm")
    src = k.source("cuda")
    (params,) = re.findall(r"__global__ void (?:__launch_bounds__\(\d+\) )?\w+\(([^)]*)\)\s*\{", src)
    assert re.search(r"\bint N\b", params), params  # 32-bit: M * K fits int32 over the range
    assert re.search(r"<\s*\(?N\b|\bN\s*\*", src)  # the tail's predicates read it
    # the pad computed in the tile copy: 16-byte cp.async, zeros past M (its predicate false)
    assert re.search(r"ptx_cp_async\w*_pred_\w*16\w*\(", src)
    if arch == "sm_90":
        assert "tefuse_wgmma_m64n" in src and "mma.sync" not in src
        assert re.search(r"\bwgmma\.mma_async\.sync\.aligned\.m64n\d+k16\.f32\.f16\.f16", compile_to_ptx(src, "sm_90a"))
    else:
        assert re.search(r"\bmma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.f16\.f16\.f32", compile_to_ptx(src, arch))


@pytest.mark.parametrize("case", sorted(NUMERIC_CASES))
@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_every_tile_buffer_has_a_constant_size(case, arch):
    """The shared operand tiles, the staging tile and the fragments are compacted to constants (the
    pad to whole tiles), where a split with a predicated tail would leave them sized by M (or by
    attention's symbolic N and K)."""
    low = _lowered(NUMERIC_CASES[case]())
    assert low.info.symbolic
    target = make_target(f"cuda:{arch}")
    mod = schedule_kernel(kernel_spec(low, choose_schedule(low, target)), target)
    compacted = compacted_script(mod)
    assert sized_at_run_time(compacted) == []
    # the operand tiles and the staging tile, each a constant shape
    fixed = re.findall(r'sblock_alloc_buffer\(\((?:T\.int64\(\d+\),? ?)+\)[^\n]*scope="shared\.dyn"', compacted)
    assert len(fixed) >= 3, compacted


@pytest.mark.parametrize("case", sorted(NUMERIC_CASES))
@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_the_symbolic_schedule_computes_numpys_values_at_each_size_on_llvm(case, arch, rng):
    """The template's schedule with plain loops (llvm cannot run tensor-core intrinsics): every tile,
    pad and masked tail as on the GPU, its rewrites (the row bounds without division by a dim
    among them), one compiled function run at three sizes of the dim (the attention products: M,
    N or the reduction symbolic too)."""
    low = _lowered(NUMERIC_CASES[case]())
    cuda = make_target(f"cuda:{arch}")
    t = find_template(cuda, low.info.anchor_kind, info=low.info)[0]
    assert t.name in ("wgmma_gemm", "tensorcore_gemm")
    cfg = t.fallback(low.info, cuda, t.space(low.info, cuda))
    sch = s_tir.Schedule(t.prepare(low.func, low.info, cfg, cuda), enable_check=t.schedule_checks(low.info, cfg))
    t.apply(sch, low.info, cfg, make_target("llvm"))
    lib = tvm.compile(t.finish(sch.mod, low.info, cfg, make_target("llvm")), target="llvm")
    for size in (1, 5, 32):
        graph = NUMERIC_CASES[case](size)
        feeds = {p.name: (rng.standard_normal([int(d) for d in p.shape]) * 0.5).astype("float16")
                 for p in graph.inputs}
        want = REFERENCE[case](**{name: a.astype("float32") for name, a in feeds.items()})
        out = tvm.runtime.empty(want.shape, graph.outputs[0].dtype, tvm.cpu())
        lib["main"](*[tvm.runtime.tensor(feeds[p.name]) for p in low.params], out)
        np.testing.assert_allclose(out.numpy().astype("float32"), want, rtol=1e-2, atol=1e-2 * np.abs(want).max())


def _fallbacks(graph, batch, target):
    """The exact kernel at `batch` and the symbolic one at that opt: template, checks, fallback."""
    exact = lower_group(fuse_graph(graph(batch))[0])
    with dim_hints({"N": batch}):
        symbolic = lower_group(fuse_graph(graph("N"))[0])
    t = find_template(target, "conv2d", info=exact.info)[0]
    assert t is find_template(target, "conv2d", info=symbolic.info)[0]
    picks = [t.fallback(i, target, t.space(i, target)).values for i in (exact.info, symbolic.info)]
    assert t.schedule_checks(exact.info, picks[0]) and not t.schedule_checks(symbolic.info, picks[1])
    return t, symbolic, picks


@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_a_symbolic_m_is_tiled_as_the_exact_kernel_at_its_opt(arch):
    """A fixed-size kernel is scheduled with TVM's prerequisite checks as ever, the symbolic one
    without, with the config the exact kernel at its range's opt takes."""
    _, _, (exact, symbolic) = _fallbacks(lambda batch: conv(batch, 3), 8, make_target(f"cuda:{arch}"))
    assert exact == symbolic


def test_a_symbolic_m_takes_no_cluster_split_k():
    """512x7x7 -> 512 3x3 at batch 16 (a deep reduction over a small grid) takes Hopper's cluster
    split-K at that fixed size; over a dim range it is not offered (the slices' sum takes whole
    tiles of rows, which a run-time M need not have)."""
    target = make_target("cuda:sm_90")
    t, symbolic, (exact, pick) = _fallbacks(lambda batch: conv(batch, 3, c=512, k=512), 16, target)
    assert exact["slices"] > 1 and pick["slices"] == 1
    space = t.space(symbolic.info, target)
    assert all(c["slices"] == 1 for c in space if space.admits(c.index))
