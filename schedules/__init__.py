"""Schedule templates, one file per (target family, anchor kind), like MIOpen's solvers.

    gpu/    thread-model templates CUDA and ROCm share (elementwise, reductions, pools, CUDA-core
            convs and GEMMs), sized by the target's DeviceCaps
    cuda/   CUDA-only: the tensor-core GEMM (gemm/), attention, prologue rules, the TIR passes
            their kernels compile with (passes/) and their tensor intrinsics (intrin/)
    rocm/   matrix-core (MFMA) templates
    cpu/    llvm

Importing this package registers every template; `schedules.registry` looks them up, and
`schedules.policy` tells the graph passes what the templates want of a graph.
"""
from . import cpu, cuda, gpu, rocm  # noqa: F401  (registration)
from .policy import graph_policy
from .registry import DOMINANT, KernelInfo, Template, get_templates, op_supported, preload, prologue_policy, register

__all__ = ["DOMINANT", "KernelInfo", "Template", "get_templates", "graph_policy", "op_supported", "preload",
           "prologue_policy", "register"]
