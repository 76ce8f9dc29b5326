"""CUDA templates (family "cuda", looked up before the gpu family's for cuda targets): the
tensor-core GEMM (gemm/), attention, and the prologue rules of the CUDA family."""
from . import attention, attention_flash, gemm, prologue  # noqa: F401  (registration)
