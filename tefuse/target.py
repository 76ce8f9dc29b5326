"""Targets: names or dicts -> tvm Targets with the limits GPU scheduling and tuning need."""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from typing import Optional, Union

import tvm

from .errors import TefuseError

DEFAULTS: dict[str, dict] = {
    "llvm": {"kind": "llvm"},
    "cuda": {"kind": "cuda", "arch": "sm_90", "max_threads_per_block": 1024,
             "max_shared_memory_per_block": 49152, "thread_warp_size": 32},
    "rocm": {"kind": "rocm", "mcpu": "gfx90a", "mtriple": "amdgcn-amd-amdhsa-hcc",
             "max_threads_per_block": 1024, "max_shared_memory_per_block": 65536,
             "thread_warp_size": 64},
}
ALIASES = {"cpu": "llvm", "gpu": "cuda"}

TargetLike = Union[str, dict, tvm.target.Target]


def make_target(spec: TargetLike = "llvm", **overrides) -> tvm.target.Target:
    """'cuda', 'llvm', 'rocm', 'cuda:sm_80' or a dict; unknown kinds are refused by name."""
    if isinstance(spec, tvm.target.Target):
        return spec
    if isinstance(spec, str):
        name, _, arch = spec.partition(":")
        name = ALIASES.get(name, name)
        if name not in DEFAULTS:
            raise TefuseError(f"unknown target {spec!r}; use one of {sorted(DEFAULTS)} "
                              f"(optionally 'cuda:sm_XX' / 'rocm:gfxNNN')")
        d = dict(DEFAULTS[name])
        if arch:
            d["arch" if name == "cuda" else "mcpu"] = arch
    else:
        d = {**DEFAULTS.get(spec.get("kind", ""), {}), **spec}
    d.update(overrides)
    if d["kind"] == "cuda":
        ensure_cuda_compiler()
    return tvm.target.Target(d)


def target_key(target: tvm.target.Target) -> str:
    """Short stable name for logs and caches, e.g. 'cuda-sm_90' or 'llvm'."""
    kind = target.kind.name
    arch = target.attrs.get("arch") or target.attrs.get("mcpu")
    return f"{kind}-{arch}" if arch and kind != "llvm" else kind


# streaming multiprocessors (CUDA) / compute units (ROCm) of the usual part of each arch;
# TVM's targets have no attribute for it. Unknown archs get DEFAULT_SM_COUNT.
SM_COUNT: dict[str, int] = {
    "sm_70": 80,    # V100
    "sm_75": 68,    # RTX 2080 Ti
    "sm_80": 108,   # A100
    "sm_86": 84,    # RTX 3090 Ti
    "sm_89": 128,   # RTX 4090
    "sm_90": 132,   # H100 SXM
    "sm_90a": 132,
    "sm_100": 148,  # B200
    "gfx908": 120,  # MI100
    "gfx90a": 110,  # MI250X (one die)
    "gfx942": 304,  # MI300X
}
DEFAULT_SM_COUNT = 132


@dataclass(frozen=True)
class GpuLimits:
    """The hardware numbers templates size kernels by, read from a target.

    Templates take these instead of module constants, so a non-default target (cuda:sm_80,
    rocm with 64-lane wavefronts) gets fallbacks and caps sized for it; the defaults are the
    H100 (sm_90) numbers the templates were measured with.
    """

    warp_size: int = 32
    sm_count: int = DEFAULT_SM_COUNT
    max_threads_per_block: int = 1024
    max_shared_memory_per_block: int = 49152
    registers_per_block: int = 65536


def gpu_limits(target: Optional[tvm.target.Target]) -> GpuLimits:
    """GpuLimits of a GPU target: its `thread_warp_size`, `max_threads_per_block`,
    `max_shared_memory_per_block`, `registers_per_block` attrs and its arch's SM count
    (`SM_COUNT`); missing values (or no target) take GpuLimits' defaults."""
    if target is None:
        return GpuLimits()
    attrs = target.attrs
    base = GpuLimits()

    def attr(name: str, default: int) -> int:
        v = attrs.get(name)
        return int(v) if v else default

    arch = str(attrs.get("arch") or attrs.get("mcpu") or "")
    return GpuLimits(
        warp_size=attr("thread_warp_size", base.warp_size),
        sm_count=SM_COUNT.get(arch, base.sm_count),
        max_threads_per_block=attr("max_threads_per_block", base.max_threads_per_block),
        max_shared_memory_per_block=attr("max_shared_memory_per_block", base.max_shared_memory_per_block),
        registers_per_block=attr("registers_per_block", base.registers_per_block),
    )


def ensure_cuda_compiler() -> None:
    """Register TVM's CUDA compile callback, choosing nvcc over NVRTC when nvcc is installed.

    Why nvcc: on the H100 machine (CUDA 13) nvcc took 0.8 s a kernel against NVRTC's 1.2 s,
    and NVRTC serialises concurrent compiles (16 threads: no faster) while nvcc runs as a
    subprocess, so a network's kernels compile in parallel (16 threads: 10x faster).
    An explicit $TVM_CUDA_COMPILE_MODE is left alone.
    """
    if "TVM_CUDA_COMPILE_MODE" not in os.environ and shutil.which("nvcc"):
        os.environ["TVM_CUDA_COMPILE_MODE"] = "nvcc"
    import tvm.support.nvcc  # noqa: F401  (registers tvm_callback_cuda_compile)


def device_for(target: tvm.target.Target, index: int = 0):
    kind = target.kind.name
    return tvm.cpu(index) if kind == "llvm" else tvm.device(kind, index)


def has_gpu(kind: str = "cuda", index: int = 0) -> bool:
    try:
        return bool(tvm.device(kind, index).exist)
    except Exception:  # noqa: BLE001 - no runtime for that kind
        return False
