"""Integer tile copies with masked lanes go through cp.async like float ones: a TIR pass.

Why: a tensor-core GEMM's operand tile copy past an operand's last row (pad_einsum's masked tail)
or inside a conv's padding is `S[ramp] = if_then_else(cond, G[ramp], fill)`. TVM 0.27's
InjectPTXAsyncCopy makes that a predicated cp.async (a false predicate stores zeros) only when the
fill is a float 0 under a single condition: an int8 tile copy (`Broadcast(int8(0), 16)`; a masked
tail around a conv's padding nests two) stays a plain load, a branch and a store, and the CUDA
codegen prints that int8x16 zero as `make_int4` of 16 chars, which nvcc refuses. With this pass an
int8 operand tile moves 16 bytes a thread on `cp.async.cg ... 16`, as fp16's does.

What: in each `async_scope` (what InjectSoftwarePipeline marks for cp.async), a store to shared
memory of an integer type whose value is `if_then_else(c1, if_then_else(c2, ..., load, f2), f1)`
with constant fills, the load from global memory of the stored type, 4, 8 or 16 bytes along
unit-stride (or scalar) indices, becomes the `cp_async_raw` call TVM's pass makes, predicated on
c1 && c2 && ..., followed, for each nonzero fill fi (a padding with a uint8 model's zero point),
by a store of fi where c1 .. c(i-1) hold and ci does not (the false predicate's zeros are a plain
store of the same thread, before it). Runs just before InjectPTXAsyncCopy, which leaves these
as they are; anything else (float copies, unmasked ones) is left to it.
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


def _constant(e):
    """The integer a constant fill (scalar or broadcast) holds, else None."""
    if isinstance(e, tirx.Broadcast):
        e = e.value
    return int(e.value) if isinstance(e, tirx.IntImm) else None


def _base(index):
    """The first element of a unit-stride index (a Ramp, or a scalar), else None."""
    if isinstance(index, tirx.Ramp):
        return index.base if isinstance(index.stride, tirx.IntImm) and index.stride.value == 1 else None
    return index if expr_dtype(index) in ("int32", "int64") else None


def _lanes(index) -> int:
    return int(index.lanes) if isinstance(index, tirx.Ramp) else 1


def _all(conds):
    out = conds[0]
    for c in conds[1:]:
        out = tirx.And(out, c)
    return out


def _guarded_copy(value):
    """(conditions outermost first, their fills, the load) of nested if_then_else's over a load."""
    conds, fills = [], []
    while is_if_then_else(value):
        cond, value, fill = value.args
        conds.append(cond)
        fills.append(fill)
    return conds, fills, value


def _cp_async(store):
    """`store` as a predicated cp_async_raw call (and its nonzero fills' stores) where it is a
    masked integer tile copy, else itself."""
    if store.buffer.scope() not in SHARED:
        return store
    conds, fills, load = _guarded_copy(store.value)
    dtype = tvm.DataType(str(store.buffer.dtype))
    if not conds or not isinstance(load, TensorLoad) or any(_constant(f) is None for f in fills):
        return store
    src = load.source
    if (not dtype.is_integer or src.scope() != "global" or str(src.dtype) != str(store.buffer.dtype)
            or len(load.indices) != 1 or len(store.indices) != 1):
        return store
    src_base, dst_base = _base(load.indices[0]), _base(store.indices[0])
    lanes = _lanes(load.indices[0])
    if src_base is None or dst_base is None or lanes != _lanes(store.indices[0]):
        return store
    nbytes = lanes * dtype.bits // 8
    if nbytes not in CP_ASYNC_BYTES:
        return store
    args = [store.buffer.data, dst_base, src.data, src_base, tirx.IntImm("int32", nbytes), _all(conds)]
    stmts = [tirx.Evaluate(Call(tvm.ir.Op.get("tirx.s_tir.cp_async_raw"), args, ret_ty=str(store.buffer.dtype)))]
    for i, fill in enumerate(fills):
        if _constant(fill) == 0:
            continue
        where = _all([*conds[:i], tirx.Not(conds[i])])
        value = fill if lanes == 1 or isinstance(fill, tirx.Broadcast) else tirx.Broadcast(fill, lanes)
        stmts.append(tirx.IfThenElse(where, tirx.BufferStore(store.buffer, value, store.indices), None))
    return stmts[0] if len(stmts) == 1 else tirx.SeqStmt(stmts)


def inject_int_tile_copies(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """`func` with its masked integer shared-memory copies in async scopes made predicated
    cp_async_raw calls (module docstring)."""
    def on_attr(attr):
        if attr.attr_key != ASYNC_SCOPE:
            return attr
        body = structural_map(attr.body, (tirx.BufferStore, _cp_async))
        return attr if body.same_as(attr.body) else tirx.AttrStmt(attr.node, attr.attr_key, attr.value, body)

    body = structural_map(func.body, (tirx.AttrStmt, on_attr), order="pre")
    return func if body.same_as(func.body) else func.with_body(body)


@tvm.tirx.transform.prim_func_pass(opt_level=0, name="tefuse.InjectIntTileCopies")
def InjectIntTileCopies(func, _mod, _ctx):  # noqa: N802 - TVM's pass naming
    return inject_int_tile_copies(func)
