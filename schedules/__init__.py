"""Schedule templates, one file per (target, anchor kind), like MIOpen's solvers.

Importing this package registers every template; `schedules.registry` looks them up.
"""
from . import cpu, cuda, rocm  # noqa: F401  (registration)
from .registry import DOMINANT, KernelInfo, Template, get_templates, op_supported, preload, prologue_policy, register

__all__ = ["DOMINANT", "KernelInfo", "Template", "get_templates", "op_supported", "preload", "prologue_policy", "register"]
