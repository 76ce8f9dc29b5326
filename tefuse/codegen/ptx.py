"""Looking into generated code: kernel counts, PTX."""
from __future__ import annotations

import re

_KERNEL_DEF = re.compile(r'__global__\s+void\s+(?:__launch_bounds__\(\s*\d+\s*\)\s+)?(\w+)\s*\([^;{]*\)\s*\{')


def cuda_kernel_names(source: str) -> list[str]:
    """Names of the __global__ functions defined (not merely declared) in CUDA source."""
    return _KERNEL_DEF.findall(source)


# instructions only an arch-specific target (sm_90a) accepts; Hopper's wgmma kernels use them
ARCH_SPECIFIC = ("wgmma.",)


def ptx_arch(source: str, arch: str) -> str:
    """The arch to compile `source` for: sm_90 code holding arch-specific instructions (wgmma,
    which tefuse compiles for sm_90a: schedules/cuda/gemm/wgmma.py) needs sm_90a."""
    if arch == "sm_90" and any(s in source for s in ARCH_SPECIFIC):
        return "sm_90a"
    return arch


def compile_to_ptx(source: str, arch: str = "sm_90") -> str:
    """CUDA source -> PTX text with the local nvcc (no GPU needed)."""
    import tvm
    from tvm.support import nvcc

    from ..target import ensure_cuda_compiler

    ensure_cuda_compiler()  # the math flags builds use
    # nvcc's wrapper reads the compute version from the target in scope, not only `arch`
    with tvm.target.Target({"kind": "cuda", "arch": arch}):
        ptx = nvcc.compile_cuda(source, target_format="ptx", arch=arch, compiler="nvcc")
    return bytes(ptx).decode()


def ptx_entries(ptx: str) -> list[str]:
    return re.findall(r"\.entry\s+(\w+)", ptx)
