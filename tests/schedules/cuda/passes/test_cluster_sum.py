"""Cluster split-K (schedules/cuda/gemm/sliced_k.py, schedules/cuda/passes/cluster_sum.py) without
a GPU: the sliced schedule computes the right numbers on llvm (1x1 and 3x3 convs, 2 and 4 slices,
ragged rows), its tile copies stay 16-byte vectors, and the CUDA kernel reads its peers' partial
tiles through `mapa` between cluster barriers, launched in clusters of the slices (PTX compiled
here); the untuned config takes it for the deep small grids that
schedules/cuda/gemm/cluster.cluster_split names."""
from __future__ import annotations

import re

import numpy as np
import pytest
from tvm import s_tir

import tefuse
from tefuse.bench.forced_config import ForcedConfig
from tefuse.graph import GraphBuilder
from tefuse.codegen.ptx import compile_to_ptx
from tefuse.schedules.cuda.gemm.sliced_k import SLICED, slice_reduction
from tefuse.schedules.cuda.gemm.template import WgmmaGemm, apply_gemm
from tefuse.target import make_target

from tests.schedules.cuda.gemm.test_wgmma import _lowered, _ohwi_conv, _run_on_llvm, _wgmma_cfg

def _projection_residual(batch, rows, k, n):
    """GPT-2's attention output: x[batch, rows, K] viewed as rows, a Linear, viewed back and
    added to the residual stream (the epilogue's output of another rank than the product's)."""
    b = GraphBuilder()
    x, r = b.input("x", (batch, rows, k), "float16"), b.input("r", (batch, rows, n), "float16")
    w = b.input("w", (n, k), "float16")
    y = b.bias_add(b.dense(b.reshape(x, shape=(batch * rows, k)), w), b.input("bias", (n,), "float16"), axis=1)
    return b.build(b.add(b.reshape(y, shape=(batch, rows, n)), r))


CASES = {  # (graph, BM, BN, stages, slices)
    "conv_1x1_2_slices": (lambda: _ohwi_conv(2, 7, 256, 128, 1), 64, 128, 3, 2),
    "conv_1x1_4_slices_128x128": (lambda: _ohwi_conv(4, 7, 256, 128, 1), 128, 128, 2, 4),
    "conv_3x3_2_slices": (lambda: _ohwi_conv(2, 7, 128, 64, 3), 64, 64, 3, 2),
    # rows of two sequences of 40 in 64-row tiles: a tile spans both, the last is ragged
    "linear_reshaped_residual_2_slices": (lambda: _projection_residual(2, 40, 256, 128), 64, 128, 3, 2),
}


def _sliced(case, target):
    make, bm, bn, stages, slices = CASES[case]
    graph = make()
    group, low = _lowered(graph)
    acc = low.info.stage("accumulator")
    sch = s_tir.Schedule(slice_reduction(low.func, acc, slices))
    cfg = {**_wgmma_cfg(bm, bn, stages, tensorize=target.kind.name == "cuda"), "slices": slices}
    apply_gemm(sch, acc + SLICED, [acc, *low.info.epilogue], cfg, target)
    return graph, group, low, sch


@pytest.mark.parametrize("case", sorted(CASES))
def test_sliced_schedule_computes_the_right_numbers_on_llvm(case):
    graph, group, low, sch = _sliced(case, make_target("llvm"))
    feed, got = _run_on_llvm(sch, group, low)
    want = tefuse.build(graph, "llvm").run(**feed)[0].astype(np.float32)
    assert np.abs(got.astype(np.float32) - want).max() <= 1e-2 * np.abs(want).max()


def _cuda_kernel(graph, values):
    (k,) = tefuse.build(graph, "cuda", db=ForcedConfig(values), split_k=False).kernels
    return k.source("cuda")


def test_cuda_reads_peers_through_mapa_between_cluster_barriers():
    """2048 -> 512 1x1 at 7x7 (ResNet-50's, batch 2): 64x128 tiles in 2 slices. The kernel stores
    its partial tile in its own slot, maps the slot of each CTA of the cluster, adds the slices
    as 16-byte vectors after a full cluster barrier, arrives once it has read them and
    waits before it exits; the PTX has the mapa and the barriers, the copies stay cp.async 16 B."""
    src = _cuda_kernel(_ohwi_conv(2, 7, 2048, 512, 1),
                       {"tile": (64, 128, 32, 64), "bk": 64, "stages": 4, "intrin": "wgmma", "vec_out": 4,
                        "slices": 2})
    body = src[src.index("main_kernel("):]
    order = [body.index(s) for s in ("tefuse_cluster_barrier();", "tefuse_cluster_map(",
                                     "tefuse_cluster_arrive();", "tefuse_cluster_wait();")]
    assert order == sorted(order)
    assert len(re.findall(r"float4 \w+ = \*\(float4\*\)\(\w+_cta[01] \+", body)) >= 2
    assert "blockIdx.z" in body
    assert "tvm_builtin_cluster_ctaid_z" in src  # the clusterCtaIdx.z launch axis (cluster_sum.inject)
    ptx = compile_to_ptx(src, "sm_90a")
    assert "mapa.u64" in ptx
    assert "barrier.cluster.arrive.release.aligned" in ptx and "barrier.cluster.wait.acquire.aligned" in ptx
    assert ptx.count("barrier.cluster.arrive.release.aligned") >= 2
    assert re.search(r"cp\.async\.cg\.shared\.global(\.L2::\d+B)? \[%r\d+\], \[%rd\d+\], 16", ptx)
    assert "ld.local" not in ptx and "st.local" not in ptx


def test_an_epilogue_that_reorders_the_rows_is_refused():
    """A transpose after the view back (row r * batch + b of the output is row b * rows + r of the
    product): the rows a thread adds up are not the ones it would write, so the split refuses the
    config rather than compute other rows' sums (it computed a 14.0 error on a 14.5 scale)."""
    b = GraphBuilder()
    x, r = b.input("x", (2, 64, 256), "float16"), b.input("r", (64, 2, 128), "float16")
    y = b.bias_add(b.dense(b.reshape(x, shape=(128, 256)), b.input("w", (128, 256), "float16")),
                   b.input("bias", (128,), "float16"), axis=1)
    graph = b.build(b.add(b.transpose(b.reshape(y, shape=(2, 64, 128)), axes=(1, 0, 2)), r))
    _, low = _lowered(graph)
    acc = low.info.stage("accumulator")
    sch = s_tir.Schedule(slice_reduction(low.func, acc, 2))
    with pytest.raises(ValueError, match="other rows"):
        apply_gemm(sch, acc + SLICED, [acc, *low.info.epilogue],
                   {**_wgmma_cfg(64, 128, 3, tensorize=False), "slices": 2}, make_target("llvm"))


def test_a_reshaped_epilogue_keeps_each_threads_rows_in_registers():
    """GPT-2's 4096 x 768 projection + residual in 2 slices: the sums a thread adds stay its
    rows' registers. The epilogue's [batch, rows, N] loops were computed at the sum's (M, N)
    tile unfused, so the sums' buffer was kept whole (4096 rows, 64 KB a thread) and the
    config refused."""
    src = _cuda_kernel(_projection_residual(32, 128, 768, 768),
                       {"tile": (64, 128, 32, 64), "bk": 64, "stages": 3, "intrin": "wgmma", "vec_out": 4,
                        "slices": 2})
    body = src[src.index("main_kernel("):]
    assert "tefuse_cluster_barrier();" in body
    ptx = compile_to_ptx(src, "sm_90a")
    assert "ld.local" not in ptx and "st.local" not in ptx


def test_a_3x3_slice_starts_on_whole_channel_vectors():
    """The slices split the input channels, each over every filter tap: a 3x3 conv's sliced A tile
    copy stays a (predicated, for the padding) 16-byte cp.async, not an element-by-element copy
    (split over the fused taps x channels, slices started mid-tap and went scalar)."""
    src = _cuda_kernel(_ohwi_conv(4, 7, 256, 256, 3),
                       {"tile": (128, 128, 64, 64), "bk": 64, "stages": 3, "intrin": "wgmma", "vec_out": 4,
                        "slices": 2})
    body = src[src.index("main_kernel("):]
    assert "ptx_cp_async_legacy_pred_cg_16" in body and "condval" not in body


def test_the_untuned_config_takes_the_cluster_split_for_deep_small_grids():
    """Batch 16 on the H100's 132 SMs: 512x7x7 3x3 takes 128x128 tiles in 4 slices (112 CTAs),
    2048x7x7->512 64x128 in 2 (104; 4 slices of 128x128 would be 512 deep each), 256x14x14 3x3
    128x128 in 2 (100); 1024x14x14->256 (1024 deep) and batch 1 (too few tiles) none."""
    tpl = WgmmaGemm()
    target = make_target("cuda")

    def pick(n, hw, c, k, r):
        _, low = _lowered(_ohwi_conv(n, hw, c, k, r))
        values = tpl.fallback(low.info, target, tpl.space(low.info, target)).values
        return tuple(values["tile"][:2]), values.get("slices", 1)

    assert pick(16, 7, 512, 512, 3) == ((128, 128), 4)
    assert pick(16, 7, 2048, 512, 1) == ((64, 128), 2)
    assert pick(16, 14, 256, 256, 3) == ((128, 128), 2)
    assert pick(16, 14, 1024, 256, 1)[1] == 1
    assert pick(1, 7, 512, 512, 3)[1] == 1
    assert pick(16, 15, 2048, 96, 1)[1] == 1  # 96 output channels: no whole tile of columns


def test_a_sliced_fallback_that_does_not_apply_falls_back_unsliced():
    """Where the slices' sum refuses the epilogue, the untuned build takes the same config with
    one slice (Template.fallback_alternatives) instead of failing."""
    tpl = WgmmaGemm()
    target = make_target("cuda")
    _, low = _lowered(_ohwi_conv(16, 7, 512, 512, 3))
    space = tpl.space(low.info, target)
    cfg = tpl.fallback(low.info, target, space)
    assert cfg["slices"] == 4
    (alt,) = tpl.fallback_alternatives(low.info, target, space, cfg)
    assert alt["slices"] == 1 and {**alt.values, "slices": 4} == cfg.values
