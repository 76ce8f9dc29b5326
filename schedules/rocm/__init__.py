"""ROCm templates (family "rocm"), looked up before the gpu family's for rocm targets:
matrix-core (MFMA) kernels the CUDA-family templates cannot express."""
from . import conv2d_mfma, dense_mfma  # noqa: F401  (registration; mfma_gemm.py: their schedule, mfma.py: intrinsics)
