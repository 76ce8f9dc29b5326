"""Looking into generated code: kernel counts, PTX."""
from __future__ import annotations

import re

_KERNEL_DEF = re.compile(r'__global__\s+void\s+(?:__launch_bounds__\(\s*\d+\s*\)\s+)?(\w+)\s*\([^;{]*\)\s*\{')


def cuda_kernel_names(source: str) -> list[str]:
    """Names of the __global__ functions defined (not merely declared) in CUDA source."""
    return _KERNEL_DEF.findall(source)


def compile_to_ptx(source: str, arch: str = "sm_90") -> str:
    """CUDA source -> PTX text with the local nvcc (no GPU needed)."""
    import tvm
    from tvm.support import nvcc

    # nvcc's wrapper reads the compute version from the target in scope, not only `arch`
    with tvm.target.Target({"kind": "cuda", "arch": arch}):
        ptx = nvcc.compile_cuda(source, target_format="ptx", arch=arch, compiler="nvcc")
    return bytes(ptx).decode()


def ptx_entries(ptx: str) -> list[str]:
    return re.findall(r"\.entry\s+(\w+)", ptx)
