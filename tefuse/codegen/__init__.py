"""Lowering fused groups to TIR, scheduling, compiling."""
from .build import CompiledKernel, build, build_group, compile_group, prepare_group
from .lower import LoweredGroup, lower_group

__all__ = ["CompiledKernel", "LoweredGroup", "build", "build_group", "compile_group", "lower_group", "prepare_group"]
