"""Lowerings TVM's llvm backend lacks for intrinsics that ops use.

`tirx.fmod` (ONNX Mod) has CUDA and ROCm lowerings but none for llvm; LLVM's own `frem` is a
call to the C library's fmod on x86 and AArch64, so the call is made directly: exact, where
a - trunc(a / b) * b is not.

ops/fastmath.py's sample ratio is CUDA's `__fdividef`; the CPU and ROCm targets divide exactly.
"""
from __future__ import annotations

from tvm import tirx as tir

from ..ops.fastmath import FAST_DIVIDE
from ..ops.value import expr_dtype

_LIBM = {"float32": "fmodf", "float64": "fmod"}


def _fmod_llvm(op):
    dtype = expr_dtype(op)
    if dtype not in _LIBM:  # half types reach here computed in float32 (ops/elemwise.py)
        return op
    return tir.call_pure_extern(dtype, _LIBM[dtype], *op.args)


tir.register_intrin_lowering("tirx.fmod", target="llvm", f=_fmod_llvm, level=99)


def _exact_divide(op):
    a, b = op.args
    return a / b


for _target in ("llvm", "rocm"):
    tir.register_intrin_lowering(FAST_DIVIDE, target=_target, f=_exact_divide, level=99)
