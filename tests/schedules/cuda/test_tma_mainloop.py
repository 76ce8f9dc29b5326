"""The TMA mainloop (experimental, TEFUSE_TMA=CMxCN): its device function compiles to the TMA,
mbarrier, cluster and wgmma instructions it is written with; a 1x1 conv's k loop is replaced by it,
with host-encoded tensor maps as kernel parameters and a grid padded to whole clusters; operands
the TMA unit cannot read (a 3x3 conv's windows) are refused with one line. Run on the H100 in
session 24 (results/issue9/session24): correct for clusters 1x1, 2x1, 1x2 and 2x2, not yet faster.
"""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from tefuse.bench.forced_config import ForcedConfig
from tefuse.driver import build
from tefuse.errors import BuildError
from tefuse.plan.spec import parse_chain
from tefuse.schedules.cuda import tma_source
from tefuse.schedules.cuda.tma_mainloop import stages_for

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (CUDA 12+)")

WGMMA = {"tile": [64, 128, 32, 64], "stages": 4, "bk": 64, "intrin": "wgmma", "vec_out": 4}


def _nvcc(src: str, tmp_path, *flags: str, out: str) -> subprocess.CompletedProcess:
    """nvcc for sm_90a on `src` (written to tmp_path), `flags` its mode, output to tmp_path/out."""
    cu = tmp_path / "k.cu"
    cu.write_text(src)
    return subprocess.run(["nvcc", "-arch=sm_90a", *flags, "-o", str(tmp_path / out), str(cu)],
                          check=True, capture_output=True, text=True)


def _ptx(src: str, tmp_path) -> str:
    _nvcc(src, tmp_path, "-ptx", out="k.ptx")
    return (tmp_path / "k.ptx").read_text()


def _wrapper(bm, bn, stages, ktiles, cm, cn) -> str:
    name = tma_source.func_name(bm, bn, stages, ktiles, cm, cn, "float16")
    body = tma_source.device_source(bm, bn, stages, ktiles, cm, cn, "float16")
    return body + f"""
extern "C" __global__ void k(const __grid_constant__ CUtensorMap ma, const __grid_constant__ CUtensorMap mb, float* out) {{
  extern __shared__ __align__(64) unsigned char smem[];
  float d[{bn // 2}];
  for (int i = 0; i < {bn // 2}; ++i) d[i] = 0.f;
  {name}(d, (unsigned long long)&ma, (unsigned long long)&mb, smem);
  for (int i = 0; i < {bn // 2}; ++i) out[(threadIdx.y * 32 + threadIdx.x) * {bn // 2} + i] = d[i];
}}
"""


@needs_nvcc
def test_cluster_mainloop_ptx(tmp_path):
    ptx = _ptx(_wrapper(64, 128, 4, 8, 2, 2, ), tmp_path)
    for ins in ("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster",
                "mbarrier.try_wait.parity", "mbarrier.arrive.expect_tx", "mapa.shared::cluster",
                "barrier.cluster.arrive", "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16",
                "%cluster_nctarank", "mbarrier.inval"):
        assert ins in ptx, ins


@needs_nvcc
def test_single_cta_mainloop_has_no_cluster_traffic(tmp_path):
    ptx = _ptx(_wrapper(64, 64, 3, 5, 1, 1), tmp_path)
    assert "cp.async.bulk.tensor.2d" in ptx and "wgmma.mma_async" in ptx
    assert "multicast::cluster" not in ptx and "barrier.cluster" not in ptx and "mapa" not in ptx


@pytest.mark.parametrize("args, why", [((64, 128, 1, 1, 1, "float16"), "2 stages"),
                                       ((96, 128, 4, 1, 8, "float16"), "rows"),
                                       ((64, 128, 4, 3, 3, "float16"), "1 to 8"),
                                       ((64, 128, 4, 1, 1, "float32"), "float16")])
def test_check_refuses(args, why):
    with pytest.raises(ValueError, match=why):
        tma_source.check(*args)


def test_stage_count_follows_the_override(monkeypatch):
    monkeypatch.delenv("TEFUSE_TMA_STAGES", raising=False)
    assert stages_for(4, 64, 128, 32) == 4
    assert stages_for(4, 64, 128, 3) == 3  # never past the reduction's steps
    monkeypatch.setenv("TEFUSE_TMA_STAGES", "max")
    assert stages_for(4, 64, 64, 32) == (200 * 1024 - 1024) // (128 * 128) == 12
    assert stages_for(4, 64, 128, 32) == 8
    monkeypatch.setenv("TEFUSE_TMA_STAGES", "1")
    assert stages_for(4, 64, 128, 32) == 2  # a stage is refilled after its reader's next step


def _conv(r: int):
    g = parse_chain(f"conv2d(k=256,r={r},pad={r // 2})+bias+relu", (2, 7, 7, 128), "float16", "NHWC")
    w = [i for i in g.inputs if i.name.endswith("_weight")][0]
    return g.with_constants({w.name: (np.random.default_rng(0).standard_normal(w.shape) * 0.1).astype("float16")})


@needs_nvcc
def test_conv_1x1_takes_the_cluster_mainloop(monkeypatch):
    monkeypatch.setenv("TEFUSE_TMA", "2x1")
    monkeypatch.setenv("TVM_CUDA_COMPILE_MODE", "nvcc")
    src = build(_conv(1), "cuda", cache=None, db=ForcedConfig(WGMMA)).source("cuda")
    assert "const __grid_constant__ CUtensorMap tma_map_a" in src
    assert "const __grid_constant__ CUtensorMap tma_map_b" in src
    # 4 stages asked, 2 taken (K = 128 is two steps); called with this lane's accumulators
    assert tma_source.func_name(64, 128, 2, 2, 2, 1, "float16") + "((&(" in src
    assert "cp_async" not in src.split("__global__")[-1]  # the kernel's own cp.async copies are gone


@needs_nvcc
def test_conv_3x3_is_refused_in_one_line(monkeypatch):
    monkeypatch.setenv("TEFUSE_TMA", "1x1")
    with pytest.raises(BuildError, match=r"failed to apply: TMA: ") as e:
        build(_conv(3), "cuda", cache=None, db=ForcedConfig(WGMMA))
    assert "\n" not in str(e.value)


def _ptxas_info(src: str, tmp_path) -> str:
    done = _nvcc(src, tmp_path, "-cubin", "-Xptxas", "-v", out="k.cubin")
    return done.stdout + done.stderr


@needs_nvcc
@pytest.mark.parametrize("cluster", ["", "1x1", "2x1"])
def test_ptxas_keeps_the_wgmma_asynchronous(cluster, monkeypatch, tmp_path):
    """ptxas serializes every wgmma of a kernel it cannot prove safe (its info C7515-C7518), with
    no error: a __trap() in the mbarrier waits' spin did that to the TMA mainloop, twice the
    cp.async kernel's time on the H100. The cp.async kernel ("") and the TMA ones must compile
    without it."""
    monkeypatch.setenv("TEFUSE_TMA", cluster)
    g = parse_chain("conv2d(k=256,r=1)+bias+relu", (16, 7, 7, 1024), "float16", "NHWC")
    w = [i for i in g.inputs if i.name.endswith("_weight")][0]
    g = g.with_constants({w.name: (np.random.default_rng(0).standard_normal(w.shape) * 0.05).astype("float16")})
    cfg = ForcedConfig({**WGMMA, "tile": [64, 64, 32, 32]})
    src = build(g, "cuda", cache=None, db=cfg, split_k=False).source("cuda")  # one kernel, A a plain matrix
    assert ("tefuse_tma_m64n64" in src) == bool(cluster)
    info = _ptxas_info(src, tmp_path)
    assert "Used" in info and "registers" in info  # ptxas said something about this kernel
    assert "serialized" not in info, [ln for ln in info.splitlines() if "serialized" in ln]


def test_switches_set_to_0_are_off(monkeypatch):
    """0 means the default for TEFUSE_TMA and TEFUSE_TMA_STAGES, as the kernel cache keys it (a
    switch set to 0 adds nothing to a kernel's key)."""
    from tefuse.schedules.cuda.tma_mainloop import cluster_from_env, stages_for

    monkeypatch.setenv("TEFUSE_TMA", "0")
    monkeypatch.setenv("TEFUSE_TMA_STAGES", "0")
    assert cluster_from_env() is None and stages_for(3, 64, 64, 8) == 3
    monkeypatch.setenv("TEFUSE_TMA", "2x1")
    monkeypatch.setenv("TEFUSE_TMA_STAGES", "5")
    assert cluster_from_env() == (2, 1) and stages_for(3, 64, 64, 8) == 5
