"""Targets: names or dicts -> tvm Targets with the limits GPU scheduling and tuning need."""
from __future__ import annotations

import os
import shutil
from typing import Union

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


def has_gpu(kind: str = "cuda") -> bool:
    try:
        return bool(tvm.device(kind, 0).exist)
    except Exception:  # noqa: BLE001 - no runtime for that kind
        return False
