"""GPU templates (family "gpu"): CUDA's thread model, parametrised by the target, so ROCm
uses them too until a template of its own family exists."""
from . import (conv2d_depthwise, conv2d_direct, conv2d_implicit_gemm, dense, generic, injective,  # noqa: F401
               pool, prologue, reduction, tensorcore, attention, attention_flash)
