"""Looking into generated code: kernel counts, PTX."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

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


@dataclass(frozen=True)
class PtxasReport:
    """What ptxas -v says of a kernel's PTX: registers a thread, bytes spilled, and whether it
    serialized the wgmma (warning C7514: a wgmma's accumulators read before the wait that
    retires it, as ptxas sees it; each wgmma then waits for the last)."""

    registers: int
    spill_bytes: int
    stack_bytes: int  # local memory a thread's frame takes (an array not kept in registers)
    wgmma_serialized: bool
    text: str


def _ptxas() -> str:
    found = shutil.which("ptxas")
    nvcc = shutil.which("nvcc")
    if found is None and nvcc is not None:  # installed beside nvcc, not always on PATH
        beside = os.path.join(os.path.dirname(os.path.realpath(nvcc)), "ptxas")
        found = beside if os.path.exists(beside) else None
    if found is None:
        raise FileNotFoundError("ptxas: not on PATH nor beside nvcc (CUDA's bin directory)")
    return found


def ptxas_report(ptx: str, arch: str = "sm_90a", timeout: float = 300.0) -> PtxasReport:
    """Assemble `ptx` with the local ptxas (no GPU needed) and read its -v report; ValueError
    where the report lacks the lines read (another ptxas's wording)."""
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "kernel.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        done = subprocess.run([_ptxas(), f"-arch={arch}", "-v", src, "-o", os.path.join(tmp, "kernel.cubin")],
                              capture_output=True, text=True, timeout=timeout)
    text = done.stdout + done.stderr
    if done.returncode:
        raise RuntimeError(f"ptxas failed: {text.strip().splitlines()[-1] if text.strip() else done.returncode}")
    regs = [int(r) for r in re.findall(r"Used (\d+) registers", text)]
    spills = [int(a) + int(b) for a, b in re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", text)]
    stacks = [int(a) for a in re.findall(r"(\d+) bytes stack frame", text)]
    if not regs or not spills or not stacks:
        raise ValueError(f"ptxas -v: no registers / spills / stack frame line in {text.strip()[:300]!r}")
    return PtxasReport(max(regs), sum(spills), max(stacks), "C7514" in text, text)
