"""Targets: names or dicts -> tvm Targets with the limits GPU scheduling and tuning need."""
from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
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
    elif d["kind"] == "rocm":
        ensure_rocm_toolchain()
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

# L2 cache bytes of the usual part of each CUDA arch (NVIDIA's architecture whitepapers): what a
# GEMM's grid order reads twice from DRAM depends on whether an operand stays in it
L2_BYTES: dict[str, int] = {
    "sm_70": 6 << 20, "sm_75": 5632 << 10, "sm_80": 40 << 20, "sm_86": 6 << 20, "sm_87": 4 << 20,
    "sm_89": 72 << 20, "sm_90": 50 << 20, "sm_90a": 50 << 20, "sm_100": 126 << 20,
}
DEFAULT_L2_BYTES = 50 << 20

# dynamic shared memory a CUDA block may opt into (cudaFuncAttributeMaxDynamicSharedMemorySize;
# CUDA programming guide, compute capabilities table), beyond the 48 KB tefuse's targets declare
SMEM_OPTIN: dict[str, int] = {
    "sm_70": 98304, "sm_75": 65536, "sm_80": 166912, "sm_86": 101376, "sm_87": 166912,
    "sm_89": 101376, "sm_90": 232448, "sm_90a": 232448, "sm_100": 232448,
}


def optin_target(target: tvm.target.Target) -> tvm.target.Target:
    """`target` declaring its arch's opt-in shared memory (SMEM_OPTIN): what a kernel that
    needs more than 48 KB a block is checked and compiled for (TVM's runtime opts in at launch)."""
    d = dict(target.export())
    d["max_shared_memory_per_block"] = device_caps(target).smem_optin
    return tvm.target.Target(d)


# CDNA archs with matrix cores (MFMA), the ones schedules/rocm's templates generate for
MFMA_ARCHS = ("gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx950")
# a CUDA arch with the Hopper instructions (wgmma, thread-block clusters, TMA) tefuse generates;
# sm_100a and later have other instructions, so they are not in it
HOPPER_ARCHS = ("sm_90", "sm_90a")


@dataclass(frozen=True)
class DeviceCaps:
    """What the device a target describes has, parsed once from the target (`device_caps`).

    Every layer reads these instead of parsing arch strings: templates size kernels by the
    limits, graph passes and the template registry decide by the `has_*` flags. The defaults are
    the H100 (sm_90) numbers the templates were measured with, so a non-default target
    (cuda:sm_80, rocm with 64-lane wavefronts) gets fallbacks and caps sized for it.
    """

    kind: str = "cuda"  # the target kind: "cuda", "rocm" or "llvm"
    arch: str = "sm_90"  # "sm_90", "gfx90a"; "" for a CPU
    warp_size: int = 32
    sm_count: int = DEFAULT_SM_COUNT  # SMs (CUDA) or compute units (ROCm)
    max_threads_per_block: int = 1024
    max_shared_memory_per_block: int = 49152  # what the target declares (48 KB by default)
    smem_optin: int = SMEM_OPTIN["sm_90"]  # what a block may opt into (no more than declared if unknown)
    registers_per_block: int = 65536
    l2_bytes: int = DEFAULT_L2_BYTES

    @property
    def compute_capability(self) -> int:
        """90 for sm_90 (0 off CUDA)."""
        digits = "".join(ch for ch in self.arch if ch.isdigit()) if self.kind == "cuda" else ""
        return int(digits or 0)

    @property
    def kernel_param_bytes(self) -> int:
        """The bytes of parameters one kernel may take: 32764 on Volta and later with CUDA 12.1+
        (the launch carries them), 4 KB elsewhere; what bounds a horizontally fused launch."""
        return 32764 if self.kind == "cuda" and self.compute_capability >= 70 else 4096

    @property
    def has_wmma(self) -> bool:
        return self.kind == "cuda" and self.compute_capability >= 70

    @property
    def has_mma(self) -> bool:
        """mma.sync with cp.async (sm_80 and later): tefuse's tensor-core GEMMs."""
        return self.kind == "cuda" and self.compute_capability >= 80

    @property
    def has_wgmma(self) -> bool:
        return self.kind == "cuda" and self.arch in HOPPER_ARCHS

    @property
    def has_clusters(self) -> bool:
        """Thread-block clusters and distributed shared memory (the cluster split-K)."""
        return self.has_wgmma

    @property
    def has_tma(self) -> bool:
        return self.has_wgmma

    @property
    def has_float8_convert(self) -> bool:
        """float8 e4m3/e5m2 conversions in one instruction (sm_89+: cvt.rn.satfinite.e4m3x2.f32)."""
        return self.kind == "cuda" and self.compute_capability >= 89

    @property
    def has_mfma(self) -> bool:
        return self.kind == "rocm" and self.arch in MFMA_ARCHS


def _target_dict(target) -> dict:
    """A target's attributes as a dict, whatever form it is given in (a Target, a name such as
    'cuda:sm_80', or a dict); None is the default CUDA target."""
    if target is None:
        return dict(DEFAULTS["cuda"])
    if isinstance(target, tvm.target.Target):
        kind = target.kind.name
        return {**DEFAULTS.get(kind, {}), "kind": kind,
                **{k: v for k, v in ((k, target.attrs[k]) for k in target.attrs.keys()) if v not in (None, "")}}
    if isinstance(target, str):
        name, _, arch = target.split()[0].partition(":")
        name = ALIASES.get(name, name)
        d = dict(DEFAULTS.get(name, {"kind": name}))
        if arch:
            d["arch" if name == "cuda" else "mcpu"] = arch
        return d
    return {**DEFAULTS.get(target.get("kind", ""), {}), **target}


def device_caps(target: Optional[TargetLike]) -> DeviceCaps:
    """The DeviceCaps of a target: its `thread_warp_size`, `max_threads_per_block`,
    `max_shared_memory_per_block`, `registers_per_block` attrs, its arch's SM count (`SM_COUNT`),
    L2 size (`L2_BYTES`) and opt-in shared memory (`SMEM_OPTIN`); what is missing takes DeviceCaps' defaults."""
    d = _target_dict(target)
    key = tuple(sorted((k, str(v)) for k, v in d.items()))
    return _caps(key)


@lru_cache(maxsize=256)
def _caps(items: tuple) -> DeviceCaps:
    d = dict(items)
    base = DeviceCaps()
    kind = d.get("kind", "cuda")

    def attr(name: str, default: int) -> int:
        v = d.get(name)
        return int(v) if v not in (None, "", "0") else default

    arch = str(d.get("arch") or d.get("mcpu") or "") if kind != "llvm" else ""
    declared = attr("max_shared_memory_per_block", base.max_shared_memory_per_block)
    return DeviceCaps(
        kind=kind, arch=arch,
        warp_size=attr("thread_warp_size", base.warp_size),
        sm_count=SM_COUNT.get(arch, base.sm_count),
        max_threads_per_block=attr("max_threads_per_block", base.max_threads_per_block),
        max_shared_memory_per_block=declared,
        smem_optin=max(SMEM_OPTIN.get(arch, 0), declared),
        registers_per_block=attr("registers_per_block", base.registers_per_block),
        l2_bytes=L2_BYTES.get(arch, base.l2_bytes),
    )


CUDA_MATH_NVRTC_OPTIONS = "--ftz=false --prec-div=true --prec-sqrt=true"


def ensure_cuda_compiler() -> None:
    """Register TVM's CUDA compile callback, choosing nvcc over NVRTC when nvcc is installed.

    Why nvcc: on the H100 machine (CUDA 13) nvcc took 0.8 s a kernel against NVRTC's 1.2 s,
    and NVRTC serialises concurrent compiles (16 threads: no faster) while nvcc runs as a
    subprocess, so a network's kernels compile in parallel (16 threads: 10x faster).
    An explicit $TVM_CUDA_COMPILE_MODE is left alone.

    IEEE math, not TVM's default --use_fast_math: fast math lowers powf through exp2(y * log2(x))
    (NaN for every negative base: GPT-2's GELU and T5's RMSNorm came out NaN), flushes denormals
    and approximates division and square roots, so fp32 builds would not match onnxruntime or
    PyTorch. NVRTC keeps its fast math library calls but takes IEEE division, square roots and
    denormals (CUDA_MATH_NVRTC_OPTIONS).
    """
    if "TVM_CUDA_COMPILE_MODE" not in os.environ and shutil.which("nvcc"):
        os.environ["TVM_CUDA_COMPILE_MODE"] = "nvcc"
    os.environ.setdefault("TVM_CUDA_NVCC_NO_FAST_MATH", "1")
    os.environ.setdefault("TVM_CUDA_NVRTC_EXTRA_OPTS", CUDA_MATH_NVRTC_OPTIONS)
    import tvm.support.nvcc  # noqa: F401  (registers tvm_callback_cuda_compile)


# ROCm's device libraries (ocml.bc, oclc_*.bc) outside a ROCm install: Debian's rocm-device-libs
# puts them in /usr/lib/<multiarch>/amdgcn/bitcode, i.e. <prefix>/amdgcn/bitcode as TVM expects
# of a ROCM_PATH.
ROCM_BITCODE_DIRS = ("/usr/lib/*/amdgcn/bitcode", "/usr/lib/amdgcn/bitcode", "/usr/local/lib/amdgcn/bitcode")


def _rocm_install() -> Optional[str]:
    """The ROCm root TVM finds by itself ($ROCM_PATH, hipcc's, /opt/rocm), else None."""
    if os.environ.get("ROCM_PATH"):
        return os.environ["ROCM_PATH"]
    hipcc = shutil.which("hipcc")
    if hipcc:
        return os.path.realpath(os.path.join(hipcc, "..", ".."))
    return "/opt/rocm" if os.path.exists("/opt/rocm/bin/hipcc") else None


def find_rocm_bitcode() -> Optional[str]:
    """A directory of ROCm device-library bitcode outside a ROCm install, else None."""
    for pattern in ROCM_BITCODE_DIRS:
        for d in sorted(glob.glob(pattern)):
            if os.path.isfile(os.path.join(d, "ocml.bc")):
                return d
    return None


def ensure_rocm_toolchain() -> None:
    """Let TVM's AMDGPU build find ROCm's device libraries where a distribution installed them.

    TVM 0.27 (tvm.support.rocm) links `<ROCM_PATH>/amdgcn/bitcode/*.bc` and finds ROCM_PATH
    from the environment, hipcc or /opt/rocm/bin/hipcc. Without any of those but with the
    libraries at /usr/lib/<multiarch>/amdgcn/bitcode (Debian's rocm-device-libs), ROCM_PATH is
    set to that prefix; an explicit $ROCM_PATH or a ROCm install is left alone. The linker is
    TVM's choice: ld.lld-<its LLVM major> first, else ld.lld (see `rocm_toolchain`).
    """
    if _rocm_install() is None:
        d = find_rocm_bitcode()
        if d is not None:
            os.environ["ROCM_PATH"] = str(Path(d).parents[1])


@dataclass(frozen=True)
class RocmToolchain:
    """What TVM's ROCm build will use here, and why it would fail (`problems`, empty if none)."""

    rocm_path: Optional[str]
    bitcode_dir: Optional[str]
    lld: Optional[str]
    lld_major: Optional[int]
    llvm_major: Optional[int]  # TVM's own LLVM
    problems: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return not self.problems


@lru_cache(maxsize=None)
def _lld_major(path: str) -> Optional[int]:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"LLD (\d+)", out)
    return int(m.group(1)) if m else None


def rocm_toolchain() -> RocmToolchain:
    """Check the pieces of TVM's AMDGPU build: device-library bitcode and an ld.lld new enough
    for the code objects TVM's LLVM writes (v6 from LLVM 18 on; LLD 14 rejects them with
    'unknown abi version')."""
    ensure_rocm_toolchain()
    problems = []
    root = _rocm_install()
    bitcode = None
    if root is None:
        problems.append("no ROCm device libraries (install rocm-device-libs, or set ROCM_PATH)")
    else:
        cand = os.path.join(root, "amdgcn", "bitcode")
        bitcode = cand if os.path.isfile(os.path.join(cand, "ocml.bc")) else None
        if bitcode is None and not os.path.isfile("/opt/rocm/lib/ocml.amdgcn.bc"):
            problems.append(f"no device-library bitcode under ROCM_PATH={root} (amdgcn/bitcode/ocml.bc)")
    try:
        llvm_major = int(tvm.target.codegen.llvm_version_major())
    except Exception:  # noqa: BLE001 - TVM without LLVM
        llvm_major = None
    from tvm.support import rocm as tvm_rocm

    found = tvm_rocm.find_lld(required=False)
    lld = found[0] if found else None
    lld_major = _lld_major(lld) if lld else None
    if lld is None:
        problems.append(f"no ld.lld (install lld-{llvm_major or 'N'})")
    elif lld_major is not None and llvm_major is not None and lld_major < min(18, llvm_major):
        problems.append(f"{lld} is LLD {lld_major}, too old for the code objects TVM's LLVM {llvm_major} "
                        f"writes; install lld-{llvm_major}")
    return RocmToolchain(root, bitcode, lld, lld_major, llvm_major, tuple(problems))


def device_for(target: tvm.target.Target, index: int = 0):
    kind = target.kind.name
    return tvm.cpu(index) if kind == "llvm" else tvm.device(kind, index)


def has_gpu(kind: str = "cuda", index: int = 0) -> bool:
    try:
        return bool(tvm.device(kind, index).exist)
    except Exception:  # noqa: BLE001 - no runtime for that kind
        return False
