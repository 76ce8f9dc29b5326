"""Lowering fused groups to TIR, choosing and applying schedules, compiling (one path), the kernel cache."""
from . import intrinsics  # noqa: F401 - registers the llvm lowerings of intrinsics TVM lacks
from .compile import KernelSpec, check_limits, compile_kernel, compile_module, schedule_kernel
from .lower import LoweredGroup, lower_group

__all__ = ["KernelSpec", "LoweredGroup", "check_limits", "compile_kernel", "compile_module", "lower_group",
           "schedule_kernel"]
