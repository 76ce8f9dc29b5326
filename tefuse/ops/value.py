"""Values flowing through op computes: lazy index functions or materialised TE tensors.

Injective ops return lazy values (a function from indices to a TIR expression), so a chain
of them composes into one expression with no intermediate stage; that composition is what
makes epilogue and prologue fusion free. Anchors (conv, dense, reductions) return tensors.
"""
from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass
from typing import Callable, Iterator, Optional, Sequence

from tvm.ir.expr import Expr as PrimExpr
from tvm import te, tirx as tir

from ..errors import OpError


@dataclass
class Value:
    shape: tuple[int, ...]
    dtype: str
    fn: Callable[..., PrimExpr]
    tensor: Optional[te.Tensor] = None

    def __call__(self, *idx):
        if len(idx) != len(self.shape):
            raise OpError(f"indexing rank-{len(self.shape)} value with {len(idx)} indices")
        return self.fn(*idx)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def is_lazy(self) -> bool:
        return self.tensor is None

    @staticmethod
    def of_tensor(t: te.Tensor) -> "Value":
        return Value(tuple(int(s) for s in t.shape), str(t.dtype), lambda *i: t(*i), t)

    def materialize(self, name: str, tag: str = "") -> te.Tensor:
        """A TE stage for this value (reuses the tensor when already materialised)."""
        if self.tensor is not None:
            return self.tensor
        if not self.shape:
            return te_compute((), lambda: self.fn(), name=name, tag=tag)
        return te_compute(self.shape, lambda *i: self.fn(*i), name=name, tag=tag)


_INDEX_DTYPE = contextvars.ContextVar("tefuse_index_dtype", default="int32")


@contextlib.contextmanager
def loop_index_dtype(dtype: str) -> Iterator[None]:
    """Stages created inside (te_compute) loop over `dtype` ("int32" or "int64") indices; per
    thread, so builds on several threads at once do not mix."""
    if dtype not in ("int32", "int64"):
        raise OpError(f"index dtype must be int32 or int64, got {dtype!r}")
    token = _INDEX_DTYPE.set(dtype)
    try:
        yield
    finally:
        _INDEX_DTYPE.reset(token)


def te_compute(shape: Sequence[int], fcompute: Callable, name: str = "compute", tag: str = "", **kwargs) -> te.Tensor:
    """te.compute whose loop variables have the index type of the enclosing `loop_index_dtype`
    (int32 by default, as te.compute's): int64 variables make every index expression built on
    them 64-bit, which a tensor of more than 2^31 - 1 elements needs."""
    if _INDEX_DTYPE.get() == "int64":
        shape = tuple(tir.IntImm("int64", int(s)) for s in shape)
    return te.compute(shape, fcompute, name=name, tag=tag, **kwargs)


def expr_dtype(e) -> str:
    """dtype of a TIR expression or tensor element (TVM 0.27's Select and some Vars carry it as
    `ty`, not `dtype`)."""
    return str(e.dtype) if hasattr(e, "dtype") else str(e.ty)


def acc_dtype(dtype: str) -> str:
    """Where sums of products accumulate: float32 for half-width floats (tensor cores do the same)."""
    return "float32" if dtype in ("float16", "bfloat16") else dtype


MATH = {"math": "fp32"}  # matrix products' optional attr: "tf32" rounds their operands first


def round_tf32(x: PrimExpr) -> PrimExpr:
    """x rounded to TF32 (10 mantissa bits, to nearest, ties away from zero: PTX's
    cvt.rna.tf32.f32, what cuDNN and PyTorch's allow_tf32 feed the tensor cores); inf and NaN
    pass unchanged. Products of rounded operands are exact in float32, so the llvm target
    computes what tf32 tensor cores do, up to summation order."""
    bits = tir.reinterpret("uint32", x)
    rounded = tir.reinterpret("float32", (bits + tir.const(0x1000, "uint32")) & tir.const(0xFFFFE000, "uint32"))
    finite = (bits & tir.const(0x7F800000, "uint32")) != tir.const(0x7F800000, "uint32")
    return tir.Select(finite, rounded, x)


def unround_tf32(e: PrimExpr) -> PrimExpr:
    """x where `e` is round_tf32(x), else e: for a schedule that rounds elsewhere (Hopper's tf32
    wgmma rounds the tiles in shared memory, since its cp.async copies cannot compute)."""
    from tvm_ffi import structural_equal

    if (isinstance(e, tir.Select) and expr_dtype(e) == "float32"
            and structural_equal(e, round_tf32(e.false_value))):
        return e.false_value
    return e


def tf32_operand(v: "Value", attrs: dict) -> "Value":
    """A matrix product's operand as its compute reads it: rounded to TF32 when attrs say so."""
    math = attrs.get("math", "fp32")
    if math not in ("fp32", "tf32"):
        raise OpError(f"math={math!r}: use 'fp32' or 'tf32'")
    if math == "fp32":
        return v
    if v.dtype != "float32":
        raise OpError(f"math='tf32' applies to float32 operands, got {v.dtype}")
    return Value(v.shape, v.dtype, lambda *i: round_tf32(v(*i)))


def lazy(shape: Sequence[int], dtype: str, fn: Callable[..., PrimExpr]) -> Value:
    return Value(tuple(int(s) for s in shape), dtype, fn)


def broadcast_shape(shapes: Sequence[Sequence[int]], what: str = "operands") -> tuple[int, ...]:
    """numpy broadcasting of several shapes; a clear error when they do not broadcast."""
    nd = max((len(s) for s in shapes), default=0)
    out = []
    for k in range(nd):
        dims = {int(s[len(s) - nd + k]) for s in shapes if len(s) - nd + k >= 0}
        dims.discard(1)
        if len(dims) > 1:
            raise OpError(f"shapes {', '.join(str(tuple(s)) for s in shapes)} of {what} do not broadcast")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def broadcast_to(v: Value, shape: Sequence[int]) -> Callable[..., PrimExpr]:
    """Index function reading `v` broadcast to `shape` (numpy rules)."""
    off = len(shape) - v.ndim
    keep = [v.shape[k] != 1 or shape[off + k] == 1 for k in range(v.ndim)]

    def fn(*idx):
        sub = [idx[off + k] if keep[k] else 0 for k in range(v.ndim)]
        return v(*sub)

    return fn
