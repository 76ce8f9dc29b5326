"""Lowerings TVM's llvm backend lacks for intrinsics that ops use.

`tirx.fmod` (ONNX Mod) has CUDA and ROCm lowerings but none for llvm; LLVM's own `frem` is a
call to the C library's fmod on x86 and AArch64, so the call is made directly: exact, where
a - trunc(a / b) * b is not.

ops/fastmath.py's sample ratio is CUDA's `__fdividef`; the CPU and ROCm targets divide exactly.

`tirx.erf` is declared vectorizable: without it TVM's vectorizer computes a loop holding erf, and
its stores, a lane at a time, so a GEMM epilogue with GELU (BERT) stored two bytes a lane or,
over rows split by a run-time size, was not fused at all. CUDA's codegen prints a vector erf a
lane at a time (erff each) and ROCm lowers erf to arithmetic; on llvm, whose codegen would hand
the vector to libm's scalar erff, the call is made here a lane at a time.

`tirx.nearbyint` (round half to even: QuantizeLinear, ONNX Round, float8 encoding) is declared
vectorizable for the same reason: a GEMM epilogue that quantizes was computed a lane at a time,
so it read its staging tile 4 bytes and its residual's codes 1 byte a load. Vectors of it print
as `nearbyintf` a lane on CUDA and lower to `llvm.nearbyint.v4f32` on llvm and ROCm (AMDGPU's
`v_rndne_f32`): the same rounding, lane for lane.
"""
from __future__ import annotations

import tvm
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


def _erf_llvm(op):
    dtype = expr_dtype(op)
    lanes = tvm.runtime.DataType(dtype).lanes
    scalar = dtype.split("x")[0]
    if scalar not in ("float32", "float64"):  # half types reach here computed in float32 (ops/elemwise.py)
        return op
    name = {"float32": "erff", "float64": "erf"}[scalar]
    if lanes == 1:
        return tir.call_pure_extern(dtype, name, *op.args)
    (x,) = op.args
    return tir.Shuffle([tir.call_pure_extern(scalar, name, tir.Shuffle([x], [i])) for i in range(lanes)],
                       list(range(lanes)))


tvm.ir.register_op_attr("tirx.erf", "TVectorizable", True)
tvm.ir.register_op_attr("tirx.nearbyint", "TVectorizable", True)
tir.register_intrin_lowering("tirx.erf", target="llvm", f=_erf_llvm, level=99)
