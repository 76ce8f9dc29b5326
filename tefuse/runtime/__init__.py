"""Running compiled graphs."""
from .executor import CompiledGraph, to_device

__all__ = ["CompiledGraph", "to_device"]
