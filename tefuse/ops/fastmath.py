"""Float arithmetic that may round differently from IEEE where only a sample position depends on it.

`sample_ratio(a, b)`: float32 a / b for a resampling scale (a source extent over an output
extent known only at run time). CUDA's IEEE division is a dozen instructions plus a call to a
slow path, and nvcc schedules no load across that call: in a pre-processing kernel the source
reads then wait for the division. `__fdividef` (within 2 ulp, no branch) places a bilinear tap
within 1e-6 of a pixel, which moves the interpolated value by that share of its neighbours'
difference. Targets without it divide exactly (codegen/intrinsics.py lowers the call).
"""
from __future__ import annotations

from tvm import tirx as tir
from tvm.ir.expr import Expr as PrimExpr

from .value import expr_dtype

FAST_DIVIDE = "tirx.cuda.fdividef"  # TVM's op for __fdividef; its CUDA codegen is TVM's own


def sample_ratio(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """a / b as float32, within 2 ulp; a constant divisor becomes a multiply by its reciprocal."""
    a = a if expr_dtype(a) == "float32" else tir.Cast("float32", a)
    if isinstance(b, (tir.IntImm, tir.FloatImm)):
        return a * tir.FloatImm("float32", 1.0 / float(b.value))
    b = b if expr_dtype(b) == "float32" else tir.Cast("float32", b)
    return tir.call_intrin("float32", FAST_DIVIDE, a, b)
