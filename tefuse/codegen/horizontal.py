"""Horizontal fusion: independent kernels run as one launch (the Fused Kernel Library's divergent
horizontal fusion, PyTorch's multi-tensor `foreach` kernels).

`merge_launches` takes scheduled kernels (PrimFuncs) that share no data dependence and returns one
PrimFunc that does all their work:

- on a GPU, each member keeps its own thread blocks: the merged grid is the members' grids laid
  end to end along blockIdx.x, and a block runs the member whose range it falls in, with
  blockIdx.x less that member's first block (threads past a member's block size idle);
- on the CPU (no thread bindings), the members' bodies run one after the other in one call.

Either way a launch's fixed cost (at batch 1 the time of most small kernels) is paid once. Only
kernels whose grid is one blockIdx.x loop over one threadIdx.x loop directly under the root (the
injective template's shape) merge on a GPU; `MergeError` says why a set cannot.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from tvm import tirx as tir
from tvm.s_tir.stmt import SBlock, SBlockRealize
from tvm_ffi import structural_map

from ..errors import TefuseError


class MergeError(TefuseError):
    """The kernels cannot be merged into one launch (not a plain grid, or not independent)."""


@dataclass(frozen=True)
class Member:
    """One kernel to merge: its scheduled PrimFunc and how many of its parameters are inputs
    (the rest are its outputs, as lower.py orders them)."""

    func: tir.PrimFunc
    num_inputs: int


def _root(func: tir.PrimFunc) -> SBlock:
    if not isinstance(func.body, SBlockRealize):
        raise MergeError("a kernel without a root block")
    return func.body.block


def _grid(func: tir.PrimFunc):
    """(blockIdx.x loop, threadIdx.x loop) directly under the root block, or None (CPU)."""
    loop = _root(func).body
    bound = isinstance(loop, tir.For) and loop.kind == tir.ForKind.THREAD_BINDING
    if not bound:
        return None
    inner = loop.body
    if (loop.thread_binding.thread_tag != "blockIdx.x" or not isinstance(inner, tir.For)
            or inner.kind != tir.ForKind.THREAD_BINDING or inner.thread_binding.thread_tag != "threadIdx.x"
            or not isinstance(loop.extent, tir.IntImm) or not isinstance(inner.extent, tir.IntImm)):
        raise MergeError("a kernel whose grid is not one blockIdx.x loop over one threadIdx.x loop")
    return loop, inner


def thread_blocks(func: tir.PrimFunc) -> int:
    """The thread blocks a scheduled kernel launches (0 for a CPU kernel or another shape)."""
    try:
        grid = _grid(func)
    except MergeError:
        return 0
    return int(grid[0].extent) if grid else 0


def _substitute(stmt, values: dict):
    return structural_map(stmt, (tir.Var, lambda v: values.get(v, v)))


def merge_launches(members: Sequence[Member], name: str) -> tir.PrimFunc:
    """One PrimFunc doing every member's work (see the module); its parameters are every
    member's inputs, in order, then every member's outputs."""
    if len(members) < 2:
        raise MergeError("fewer than two kernels to merge")
    inputs = [p for m in members for p in list(m.func.params)[:m.num_inputs]]
    outputs = [p for m in members for p in list(m.func.params)[m.num_inputs:]]
    allocs = [b for m in members for b in (_root(m.func).alloc_buffers or [])]
    grids = [_grid(m.func) for m in members]
    if all(g is None for g in grids):  # CPU: one call, the bodies in turn
        body = tir.SeqStmt([_root(m.func).body for m in members])
    elif any(g is None for g in grids):
        raise MergeError("GPU and CPU kernels cannot share a launch")
    else:
        body = _block_ranges(grids)
    root = SBlock([], [], [], "root", body, alloc_buffers=allocs)
    func = tir.PrimFunc(inputs + outputs, SBlockRealize([], tir.const(True, "bool"), root),
                        attrs=members[0].func.attrs)
    return func.with_attr("global_symbol", name)


def _block_ranges(grids) -> tir.Stmt:
    bx, tx = tir.Var("bx", "int32"), tir.Var("tx", "int32")
    threads = max(int(t.extent) for _, t in grids)
    starts, total = [], 0
    for b, _ in grids:
        starts.append(total)
        total += int(b.extent)
    body = None
    for (b, t), start in reversed(list(zip(grids, starts))):
        work = _substitute(t.body, {b.loop_var: bx - start if start else bx, t.loop_var: tx})
        if int(t.extent) < threads:
            work = tir.IfThenElse(tx < int(t.extent), work, None)
        body = work if body is None else tir.IfThenElse(bx < start + int(b.extent), work, body)
    return tir.For(bx, 0, total, tir.ForKind.THREAD_BINDING,
                   tir.For(tx, 0, threads, tir.ForKind.THREAD_BINDING, body,
                           thread_binding=tir.IterVar(None, tx, 1, "threadIdx.x")),
                   thread_binding=tir.IterVar(None, bx, 1, "blockIdx.x"))
