"""Float arithmetic without IEEE division's slow path, where only a sample position depends on it.

`sample_ratio(a, b)`: float32 a / b for a resampling scale (a source extent over an output
extent). CUDA's IEEE division is a dozen instructions plus a call to a slow path, and nvcc
schedules no load across that call: in a pre-processing kernel the source reads then wait for
the division. Here the quotient is q = a (1 / b) refined by one Newton step, q + (a - q b) (1 / b),
which is what the division's own fast path computes: branch-free, within an ulp of the
correctly rounded quotient (a 4K rectangle's coordinates are float32 either way, and on a noise
image an ulp of a coordinate moves a bilinear value measurably). The reciprocal of a constant is
folded at build time; of a run-time extent it is CUDA's `__fdividef(1, b)` (2 ulp, before the
step), an exact division on targets without it (codegen/intrinsics.py lowers the call).
"""
from __future__ import annotations

from tvm import tirx as tir
from tvm.ir.expr import Expr as PrimExpr

from .value import bind, bind_all, expr_dtype

FAST_DIVIDE = "tirx.cuda.fdividef"  # TVM's op for __fdividef; its CUDA codegen is TVM's own


def sample_ratio(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """a / b as float32, within an ulp, with no division on CUDA's instruction path."""
    f32 = lambda x: x if expr_dtype(x) == "float32" else tir.Cast("float32", x)  # noqa: E731
    a = f32(a)
    if isinstance(b, (tir.IntImm, tir.FloatImm)):
        return _refined(a, tir.FloatImm("float32", float(b.value)), tir.FloatImm("float32", 1.0 / float(b.value)))
    one = tir.FloatImm("float32", 1.0)
    return bind_all([f32(b)], lambda d: bind(tir.call_intrin("float32", FAST_DIVIDE, one, d),
                                              lambda r: _refined(a, d, r), always=True), always=True)


def _refined(a: PrimExpr, d: PrimExpr, r: PrimExpr) -> PrimExpr:
    """a / d from r, about 1 / d: q = a r, then q + (a - q d) r (the residual's correction)."""
    return bind(a * r, lambda q: q + (a - q * d) * r, always=True)
