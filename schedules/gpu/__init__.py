"""GPU templates (family "gpu"): CUDA's thread model, parametrised by the target's DeviceCaps
(warp size, SM count, shared memory), so ROCm uses them too where no template of its own family
takes a kernel."""
from . import (conv2d_depthwise, conv2d_direct, conv2d_implicit_gemm, dense, generic, injective,  # noqa: F401
               pool, reduction)
