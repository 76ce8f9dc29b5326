"""Values flowing through op computes: lazy index functions or materialised TE tensors.

Injective ops return lazy values (a function from indices to a TIR expression), so a chain
of them composes into one expression with no intermediate stage; that composition is what
makes epilogue and prologue fusion free. Anchors (conv, dense, reductions) return tensors.
"""
from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass, field
from typing import Callable, Iterator, Optional, Sequence

from tvm.ir.expr import Call, Expr as PrimExpr
from tvm import sym, te, tirx as tir
from tvm_ffi import VisitInterrupt, structural_map, structural_walk

from ..errors import OpError


@dataclass
class Value:
    shape: tuple[int, ...]
    dtype: str
    fn: Callable[..., PrimExpr]
    tensor: Optional[te.Tensor] = None

    _memo: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __call__(self, *idx):
        """The expression at `idx`; the same index objects give the same expression object, so
        an op reading one value twice (maximum(v, v), x * sigmoid(x) across nodes) sees one
        operand and binds it once (`bind_all`) instead of building it twice."""
        if len(idx) != len(self.shape):
            raise OpError(f"indexing rank-{len(self.shape)} value with {len(idx)} indices")
        key = tuple(("int", i) if isinstance(i, int) else id(i) for i in idx)
        hit = self._memo.get(key)
        if hit is None:
            hit = self._memo[key] = (idx, self.fn(*idx))  # idx kept: its ids stay unique
        return hit[1]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def is_lazy(self) -> bool:
        return self.tensor is None

    @staticmethod
    def of_tensor(t: te.Tensor) -> "Value":
        return Value(tuple(dim_of(s) for s in t.shape), str(t.dtype), lambda *i: t(*i), t)

    def materialize(self, name: str, tag: str = "") -> te.Tensor:
        """A TE stage for this value (reuses the tensor when already materialised)."""
        if self.tensor is not None:
            return self.tensor
        if not self.shape:
            return te_compute((), lambda: self.fn(), name=name, tag=tag)
        return te_compute(self.shape, lambda *i: self.fn(*i), name=name, tag=tag)


def dim_of(s):
    """A TE extent as a shape holds it: a fixed size as an int, a symbolic one (an expression of
    int64 dim variables, graph/dims.py) simplified and kept."""
    if isinstance(s, (int, tir.IntImm)):
        return int(s)
    s = sym.Analyzer().simplify(s)  # one per call: builds schedule groups in threads
    return int(s) if isinstance(s, tir.IntImm) else s


def is_static_shape(shape: Sequence) -> bool:
    """Whether every dim of `shape` is a fixed size."""
    return all(isinstance(s, (int, tir.IntImm)) for s in shape)




_DIM_HINTS: contextvars.ContextVar[dict] = contextvars.ContextVar("tefuse_dim_hints", default={})


@contextlib.contextmanager
def dim_hints(sizes: dict) -> Iterator[None]:
    """Inside, a symbolic dim has the size `sizes[name]` wherever a fixed number is needed: an
    op's geometry (what a template sizes its tiles for) is that of the size a dynamic build is
    tuned for (its range's opt), while the kernels take the dim as a run-time argument."""
    token = _DIM_HINTS.set({**_DIM_HINTS.get(), **sizes})
    try:
        yield
    finally:
        _DIM_HINTS.reset(token)


def hinted_dim(s) -> int:
    """A dim as a number: a fixed size, or a symbolic one at its `dim_hints` size."""
    return eval_dim(s, _DIM_HINTS.get())


_DIM_LIMITS: contextvars.ContextVar[dict] = contextvars.ContextVar("tefuse_dim_limits", default={})


@contextlib.contextmanager
def dim_limits(limits: dict) -> Iterator[None]:
    """Inside, a symbolic dim `name` takes sizes from `limits[name]` = (min, max) only (its range):
    what lowering needs to know whether a kernel's indices fit in 32 bits at every size it may
    run at (codegen/lower.py: index_dtype)."""
    token = _DIM_LIMITS.set({**_DIM_LIMITS.get(), **limits})
    try:
        yield
    finally:
        _DIM_LIMITS.reset(token)


def current_dim_limits() -> dict:
    """{name: (min, max)} of the dims whose ranges are in force (dim_limits)."""
    return dict(_DIM_LIMITS.get())


_DIM_OPS = ((tir.Add, lambda a, b: a + b), (tir.Sub, lambda a, b: a - b), (tir.Mul, lambda a, b: a * b),
            (tir.FloorDiv, lambda a, b: a // b), (tir.FloorMod, lambda a, b: a % b), (tir.Min, min), (tir.Max, max))


def eval_dim(d, sizes: dict) -> int:
    """A dim's size with each dim variable at `sizes[name]` (a fixed size stays itself)."""
    if isinstance(d, (int, tir.IntImm)):
        return int(d)
    if isinstance(d, tir.Var):
        if d.name not in sizes:
            raise OpError(f"dim {d.name!r} has no size here: give it a range (min:opt:max)")
        return int(sizes[d.name])
    if isinstance(d, tir.Cast):
        return eval_dim(d.value, sizes)
    for kind, fn in _DIM_OPS:
        if isinstance(d, kind):
            return fn(eval_dim(d.a, sizes), eval_dim(d.b, sizes))
    raise OpError(f"dim expression {d} is not sizes combined by + - * // % min max")


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
        shape = tuple(tir.IntImm("int64", int(s)) if isinstance(s, (int, tir.IntImm)) else tir.Cast("int64", s)
                      if expr_dtype(s) != "int64" else s for s in shape)
    return te.compute(shape, fcompute, name=name, tag=tag, **kwargs)


def expr_dtype(e) -> str:
    """dtype of a TIR expression or tensor element (TVM 0.27's Select and some Vars carry it as
    `ty`, not `dtype`)."""
    return str(e.dtype) if hasattr(e, "dtype") else str(e.ty)


def is_if_then_else(e) -> bool:
    """Whether e is a call of tir.if_then_else: the one TIR expression whose branches are
    evaluated only when taken (passes must not hoist out of them)."""
    return isinstance(e, Call) and str(getattr(e.op, "name", "")).endswith("if_then_else")


def acc_dtype(dtype: str) -> str:
    """Where sums of products accumulate: float32 for half-width floats (tensor cores do the same)."""
    return "float32" if dtype in ("float16", "bfloat16") else dtype


MATH = {"math": "fp32"}  # matrix products' optional attr: "tf32" rounds their operands first
# matrix products' optional attr: their result's dtype, where it is not the operands' (int8
# operands accumulating and giving int32: a quantized anchor, graph/qdq.py)
OUT_DTYPE = {"out_dtype": ""}


def product_dtypes(dtype: str, attrs: dict) -> tuple[str, str]:
    """(accumulator, result) dtypes of a matrix product of `dtype` operands (see OUT_DTYPE)."""
    out = str(attrs.get("out_dtype") or "")
    if not out:
        return acc_dtype(dtype), dtype
    if not (dtype in ("int8", "uint8") and out == "int32"):
        raise OpError(f"out_dtype {out} of {dtype} operands (int8/uint8 -> int32 only)")
    return out, out


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


SMALL = 12  # nodes: an operand up to this size is repeated rather than bound


def _small(expr: PrimExpr) -> bool:
    """Whether expr has at most SMALL nodes: repeating it costs little, and leaving it in
    place keeps the forms schedules and TVM's vectorizer recognise (a GEMM's A copy computing
    `x < 0 ? 0 : x` while loading stays a vector load). A chain of ops still grows only until
    its operand passes SMALL nodes, then that operand is bound."""
    count = [0]

    def on_node(_e):
        count[0] += 1
        return VisitInterrupt(None) if count[0] > SMALL else None

    return structural_walk(expr, (PrimExpr, on_node), order="pre") is None


_LEGALIZED = ("bfloat16", "float8", "float6", "float4")


def _legalized_inside(expr: PrimExpr) -> bool:
    """Whether a bfloat16 or float8/6/4 value is part of expr: TVM's BF16/FP8 compute
    legalization does not lower what sits inside a Let, so such an expression is left unbound
    (it repeats, as before; these types' chains are short in practice)."""
    def on_node(e):
        return VisitInterrupt(e) if expr_dtype(e).startswith(_LEGALIZED) else None

    return structural_walk(expr, (PrimExpr, on_node), order="pre") is not None


def bind(expr: PrimExpr, body: Callable[[PrimExpr], PrimExpr], always: bool = False) -> PrimExpr:
    """body(expr) with a larger expr computed once: a rule that uses its operand twice (relu's
    select, gelu, x * sigmoid(x)) would otherwise repeat the operand's whole expression, and a
    chain of N such ops inlined into one kernel would grow as 2^N. `always` binds a small one
    too: a load bound outside a select keeps the select's arms free of loads, so TVM leaves it a
    select instead of a branch (RewriteUnsafeSelect)."""
    if (_small(expr) and not always) or _legalized_inside(expr):
        return body(expr)
    v = tir.Var("v", expr_dtype(expr))
    return tir.Let(v, expr, body(v))


def unbind(expr: PrimExpr) -> PrimExpr:
    """expr with every Let's value put in place of its variable: for an address computed by ops
    (an index tensor's arithmetic inlined into a gather), where TVM's codegen would bind one Let
    variable once per load that repeats it."""
    def on_let(let):
        value = let.value
        return structural_map(let.body, (tir.Var, lambda v: value if v.same_as(let.var) else v))

    return structural_map(expr, (tir.Let, on_let))


def bind_all(exprs: Sequence[PrimExpr], body: Callable[..., PrimExpr], always: bool = False) -> PrimExpr:
    """`bind` for several operands; the same expression object passed twice is bound once."""
    bound: list = []

    def step(k: int) -> PrimExpr:
        if k == len(exprs):
            return body(*bound)
        for j in range(k):
            if exprs[j].same_as(exprs[k]):
                bound.append(bound[j])
                return step(k + 1)
        return bind(exprs[k], lambda v: (bound.append(v), step(k + 1))[1], always)

    return step(0)


def lazy(shape: Sequence[int], dtype: str, fn: Callable[..., PrimExpr]) -> Value:
    return Value(tuple(dim_of(s) for s in shape), dtype, fn)


def dim_factors(shape: Sequence) -> tuple[int, list]:
    """(the product of the fixed sizes, the symbolic factors) of a shape's element count; a
    product of dim variables (N*S from a reshape) counts as its factors."""
    static, sym = 1, []
    stack = list(shape)
    while stack:
        d = stack.pop()
        if isinstance(d, (int, tir.IntImm)):
            static *= int(d)
        elif isinstance(d, tir.Mul):
            stack += [d.a, d.b]
        else:
            sym.append(d)
    return static, sym


def same_dim(a, b) -> bool:
    """Whether two dims are the same size at every binding (equal ints, or the same expression)."""
    if isinstance(a, (int, tir.IntImm)) or isinstance(b, (int, tir.IntImm)):
        return isinstance(a, (int, tir.IntImm)) and isinstance(b, (int, tir.IntImm)) and int(a) == int(b)
    from tvm_ffi import structural_equal

    return structural_equal(a, b, map_free_vars=False)


def dim_product(dims: Sequence):
    """The product of dims: an int when all are fixed, else an expression."""
    static, sym = dim_factors(dims)
    out = static
    for d in sym:
        out = out * d
    return dim_of(out)


def dim_quotient(total: Sequence, part: Sequence):
    """prod(total) / prod(part) where the division is exact at every binding (each symbolic factor
    of `part` is one of `total`'s, the fixed sizes divide); None where it is not known to be."""
    st, sy = dim_factors(total)
    pt, py = dim_factors(part)
    sy = list(sy)
    for f in py:
        k = next((j for j, g in enumerate(sy) if same_dim(f, g)), None)
        if k is None:
            return None
        sy.pop(k)
    if pt == 0 or st % pt:
        return None
    return dim_product([st // pt, *sy])


def broadcast_shape(shapes: Sequence[Sequence[int]], what: str = "operands") -> tuple[int, ...]:
    """numpy broadcasting of several shapes; a clear error when they do not broadcast."""
    nd = max((len(s) for s in shapes), default=0)
    out = []
    for k in range(nd):
        dims: list = []
        for s in shapes:
            if len(s) - nd + k >= 0:
                d = dim_of(s[len(s) - nd + k])
                if not (isinstance(d, int) and d == 1) and not any(same_dim(d, e) for e in dims):
                    dims.append(d)
        if len(dims) > 1:
            raise OpError(f"shapes {', '.join(str(tuple(s)) for s in shapes)} of {what} do not broadcast"
                          + ("" if is_static_shape(dims) else " (a symbolic dim broadcasts only with 1 or itself)"))
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
