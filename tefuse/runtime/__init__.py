"""Running compiled kernels and graphs; saved artefacts."""
from .executor import CompiledGraph, to_device
from .kernel import CompiledKernel

__all__ = ["CompiledGraph", "CompiledKernel", "to_device"]
