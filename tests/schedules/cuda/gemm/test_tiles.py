"""The grid order of the tensor-core GEMMs (tiles.m_tiles_first, bind_grid): N tiles on blockIdx.x
unless the weight is too big for the L2 to keep across rows of M tiles, as a vocabulary
projection's is; then M tiles on blockIdx.x, in both templates' schedules."""
from __future__ import annotations

import pytest
from tvm import s_tir

from tefuse.schedules.common import launch_extents
from tefuse.schedules.cuda.gemm.template import apply_gemm
from tefuse.schedules.cuda.gemm.tiles import MAX_GRID_Y, m_tiles_first
from tefuse.target import L2_BYTES, make_target

from .test_mma import _dense
from .test_wgmma import _lowered, _wgmma_cfg

H100_L2 = L2_BYTES["sm_90"]


def test_a_weight_the_l2_keeps_leaves_n_tiles_fastest():
    # BERT's fc1 at batch 32: a 4.5 MB weight, 32 rows of 24 tiles
    assert not m_tiles_first(32, 24, 768, 128, 128, 2, H100_L2)
    # a conv's implicit GEMM: 400 MB of im2col rows, a 2 MB weight
    assert not m_tiles_first(6272, 4, 1152, 128, 128, 2, H100_L2)


def test_a_vocabulary_projection_runs_down_m_first():
    # GPT-2's head at 32 x 128 tokens: a 77 MB weight read again for each of 32 rows of tiles
    assert m_tiles_first(32, 393, 768, 128, 128, 2, H100_L2)
    # one row of M tiles reads the weight once either way
    assert not m_tiles_first(1, 393, 768, 128, 128, 2, H100_L2)
    # the same weight fits a bigger L2
    assert not m_tiles_first(32, 393, 768, 128, 128, 2, 4 * H100_L2)


def test_both_operands_past_the_l2_keep_n_tiles_fastest():
    # BERT's fc1 at batch 32 on a 6 MB L2 (sm_86): A 6.3 MB and B 4.7 MB both past half of it
    assert not m_tiles_first(32, 24, 768, 128, 128, 2, L2_BYTES["sm_86"])
    # the head on the same GPU: A past half the L2 too, so no order keeps it
    assert not m_tiles_first(32, 393, 768, 128, 128, 2, L2_BYTES["sm_86"])


def test_m_tiles_past_grid_y_go_on_x_whatever_the_traffic():
    # a 112x112 conv at batch 512 as 64-row tiles, its weight tiny
    assert m_tiles_first(512 * 112 * 112 // 64, 1, 576, 64, 64, 2, H100_L2)


def test_unknown_extents_and_too_many_n_tiles_keep_the_default():
    assert not m_tiles_first(None, 393, 768, 128, 128, 2, H100_L2)  # a symbolic M
    assert not m_tiles_first(MAX_GRID_Y + 2, MAX_GRID_Y + 1, 768, 128, 128, 2, H100_L2)  # N tiles would not fit y


def _grid(graph, cfg, arch):
    _, low = _lowered(graph)
    sch = s_tir.Schedule(low.func)
    apply_gemm(sch, low.info.stage("accumulator"), low.info.epilogue, cfg, make_target(f"cuda:{arch}"))
    ext = launch_extents(sch.mod.script())
    return int(ext["blockIdx.x"]), int(ext["blockIdx.y"])


MMA_CFG = dict(BM=128, BN=128, BK=32, WM=64, WN=64, stages=3, intrin="mma", vec_out=4)


@pytest.mark.parametrize("cfg,arch", [(_wgmma_cfg(128, 128), "sm_90a"), (MMA_CFG, "sm_80")], ids=["wgmma", "mma"])
def test_the_schedules_bind_the_grid_by_the_rule(cfg, arch):
    assert _grid(_dense(4096, 50257, 768, "float16"), cfg, arch) == (32, 393)  # M tiles on x
    assert _grid(_dense(4096, 3072, 768, "float16"), cfg, arch) == (24, 32)  # N tiles on x


def test_a_gemm_of_more_m_tiles_than_grid_y_takes_builds_on_the_tensor_cores():
    """8.96M rows of 128 (70,000 tiles): on blockIdx.y the build was refused (CUDA's 65535)."""
    import tefuse
    from tefuse.graph import GraphBuilder

    b = GraphBuilder()
    x, w = b.input("x", (128 * 70000, 64), "float16"), b.input("w", (64, 64), "float16")
    (kernel,) = tefuse.build(b.build(b.relu(b.dense(x, w))), "cuda:sm_90", db=None).kernels
    assert kernel.template == "wgmma_gemm"
    assert launch_extents(str(kernel.tir))["blockIdx.x"] == 70000
