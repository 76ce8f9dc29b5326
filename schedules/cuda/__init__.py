"""CUDA templates (ROCm reuses them: same thread model, lowered to AMDGPU)."""
from . import conv2d_direct, generic, injective  # noqa: F401
from . import conv2d_implicit_gemm  # noqa: F401  (after conv2d_direct: direct stays the fallback)
from . import conv2d_depthwise  # noqa: F401
from . import reduction  # noqa: F401
from . import dense  # noqa: F401
