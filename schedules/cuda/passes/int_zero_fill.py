"""Integer tile copies with a masked tail go through cp.async like float ones: a TIR pass.

Why: a tensor-core GEMM's operand tile copy past an operand's last row (pad_einsum's masked tail)
or inside a conv's zero padding is `S[ramp] = if_then_else(cond, G[ramp], 0)`. TVM 0.27's
InjectPTXAsyncCopy turns that into a predicated cp.async (a false predicate stores zeros) only
when the 0 is a float: an int8 tile copy's `Broadcast(int8(0), 16)` leaves it a plain load, a
branch and a store, and the CUDA codegen writes that int8x16 zero as `make_int4` of 16 chars,
which nvcc refuses. With this pass an int8 operand tile moves 16 bytes a thread on
`cp.async.cg ... 16`, as fp16's does.

What: in each `async_scope` (what InjectSoftwarePipeline marks for cp.async), a store to shared
memory of `if_then_else(cond, load, 0)` with an integer 0 (scalar or broadcast), a load from
global memory of the stored type, 4, 8 or 16 bytes along unit-stride (or scalar) indices,
becomes the same `cp_async_raw` call with `cond` as its predicate that TVM's pass makes for a
float zero. Runs just before InjectPTXAsyncCopy, which leaves that call as it is (and does the
float and unmasked copies); anything else is left to it.
"""
from __future__ import annotations

import tvm
from tvm import tirx
from tvm.ir.expr import Call, TensorLoad
from tvm_ffi import structural_map

from ....ops.value import expr_dtype, is_if_then_else

ASYNC_SCOPE = "async_scope"
CP_ASYNC_BYTES = (4, 8, 16)
SHARED = ("shared", "shared.dyn")


def _is_int_zero(e) -> bool:
    if isinstance(e, tirx.Broadcast):
        e = e.value
    return isinstance(e, tirx.IntImm) and e.value == 0


def _base(index):
    """The first element of a unit-stride index (a Ramp, or a scalar), else None."""
    if isinstance(index, tirx.Ramp):
        return index.base if isinstance(index.stride, tirx.IntImm) and index.stride.value == 1 else None
    return index if expr_dtype(index) in ("int32", "int64") else None


def _lanes(index) -> int:
    return int(index.lanes) if isinstance(index, tirx.Ramp) else 1


def _cp_async(store):
    """`store` as a predicated cp_async_raw call where it is an integer zero-filled copy, else
    itself."""
    value = store.value
    if store.buffer.scope() not in SHARED or not is_if_then_else(value):
        return store
    cond, load, other = value.args
    if not (isinstance(load, TensorLoad) and _is_int_zero(other)):
        return store
    src = load.source
    dtype = tvm.DataType(str(store.buffer.dtype))
    if (src.scope() != "global" or str(src.dtype) != str(store.buffer.dtype) or not dtype.is_integer
            or len(load.indices) != 1 or len(store.indices) != 1):
        return store
    src_base, dst_base = _base(load.indices[0]), _base(store.indices[0])
    lanes = _lanes(load.indices[0])
    if src_base is None or dst_base is None or lanes != _lanes(store.indices[0]):
        return store
    nbytes = lanes * dtype.bits // 8
    if nbytes not in CP_ASYNC_BYTES:
        return store
    args = [store.buffer.data, dst_base, src.data, src_base, tirx.IntImm("int32", nbytes), cond]
    return tirx.Evaluate(Call(tvm.ir.Op.get("tirx.s_tir.cp_async_raw"), args, ret_ty=str(store.buffer.dtype)))


def inject_int_zero_fill_copies(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """`func` with its integer zero-filled shared-memory copies in async scopes made predicated
    cp_async_raw calls (module docstring)."""
    def on_attr(attr):
        if attr.attr_key != ASYNC_SCOPE:
            return attr
        body = structural_map(attr.body, (tirx.BufferStore, _cp_async))
        return attr if body.same_as(attr.body) else tirx.AttrStmt(attr.node, attr.attr_key, attr.value, body)

    body = structural_map(func.body, (tirx.AttrStmt, on_attr), order="pre")
    return func if body.same_as(func.body) else func.with_body(body)


@tvm.tirx.transform.prim_func_pass(opt_level=0, name="tefuse.InjectIntZeroFillCopies")
def InjectIntZeroFillCopies(func, _mod, _ctx):  # noqa: N802 - TVM's pass naming
    return inject_int_zero_fill_copies(func)
