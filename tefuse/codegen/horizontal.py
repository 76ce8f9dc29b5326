"""Horizontal fusion: independent kernels run as one launch (the Fused Kernel Library's divergent
horizontal fusion, PyTorch's multi-tensor `foreach` kernels).

`merge_launches` takes scheduled kernels (PrimFuncs, after their templates, before
`tvm.compile`) that share no data dependence and returns one PrimFunc that does all their work:

- on a GPU, each member keeps its own thread blocks: the merged grid is the members' grids laid
  end to end along blockIdx.x (a member's block loops flattened, the innermost fastest: x for
  most kernels, y for a GEMM whose M tiles are on x, `tiles.m_tiles_first`), and a block runs
  the member whose range holds it, found by a binary search over the ranges' starts, with its
  own block indices recovered from blockIdx.x less that member's first block;
- the block size is common. Members whose grid is one blockIdx.x loop over one threadIdx.x loop
  and that share no memory between threads (the injective and elementwise kernels) are padded to
  the largest member's threads, the threads past their own count idle. Any other member (shared
  memory, barriers, threadIdx.y/z, warp-level code) keeps its thread loops as they are, so all
  members must then launch the same threads along each of threadIdx.x/y/z: a barrier inside a
  member is reached by every thread of its block;
- on the CPU (no thread bindings), the members' bodies run one after the other in one call.

Either way a launch's fixed cost (at batch 1 the time of most small kernels) is paid once. The
parameters are every member's inputs, in order, then every member's outputs. `MergeError` says
why a set of kernels cannot share a launch.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from tvm import tirx as tir
from tvm.ir.expr import Call
from tvm.s_tir.stmt import SBlock, SBlockRealize
from tvm_ffi import structural_map, structural_walk

from ..errors import TefuseError
from ..ops.value import expr_dtype

SHARED_SCOPES = ("shared", "shared.dyn", "warp")
# A merged launch's host function takes every member's buffers (161 tensors of an optimizer
# step: 650 arguments), and TVM's checks of each (type, rank, shape, strides, device) made it so
# large that LLVM's JIT spent minutes on it at the first call (ResNet-50's Adam: 40 tensors
# 16.6 s, without the checks 1.1 s; all 161, 5.6 s). Its caller is tefuse's executor, which
# passes the buffers it planned for these very shapes, so the checks are left out.
PASS_CONFIG = {"tirx.disable_assert": True}
# calls whose threads work together (a block's barrier, a warp's shuffle or matrix op): a kernel
# making them keeps its own thread loops and is not padded
THREAD_GROUP_CALLS = ("allreduce", "sync", "shfl", "warp", "mma", "ldmatrix", "cp_async", "barrier")


class MergeError(TefuseError):
    """The kernels cannot be merged into one launch (not a plain grid, or not independent)."""


@dataclass(frozen=True)
class Member:
    """One kernel to merge: its scheduled PrimFunc and how many of its parameters are inputs
    (the rest are its outputs, as lower.py orders them)."""

    func: tir.PrimFunc
    num_inputs: int


@dataclass(frozen=True)
class Grid:
    """A GPU kernel's launch as merging sees it: its blockIdx loops (outermost first, peeled off
    the top of the body), what runs under them, the threads it launches by tag, and whether it
    may be padded to more threads (one threadIdx.x loop on top, no memory shared by threads)."""

    blocks: tuple[tuple[tir.Var, int], ...]
    body: tir.Stmt
    threads: tuple[tuple[str, int], ...]
    paddable: bool
    allocs: tuple = ()  # its root block's buffers, allocated in its own range of blocks
    warp: bool = False  # it holds warp-scope buffers (tensor-core fragments)

    @property
    def num_blocks(self) -> int:
        n = 1
        for _, extent in self.blocks:
            n *= extent
        return n


def _root(func: tir.PrimFunc) -> SBlock:
    if not isinstance(func.body, SBlockRealize):
        raise MergeError("a kernel without a root block")
    return func.body.block


def _bound(stmt, prefix: str) -> bool:
    return (isinstance(stmt, tir.For) and stmt.kind == tir.ForKind.THREAD_BINDING
            and stmt.thread_binding.thread_tag.startswith(prefix))


def grid(func: tir.PrimFunc) -> Optional[Grid]:
    """The kernel's `Grid`, or None for a CPU kernel (no thread bindings)."""
    stmt, blocks = _root(func).body, []
    while _bound(stmt, "blockIdx."):
        if not isinstance(stmt.extent, tir.IntImm):
            raise MergeError(f"a kernel whose {stmt.thread_binding.thread_tag} extent is not a constant")
        blocks.append((stmt.loop_var, int(stmt.extent)))
        stmt = stmt.body
    threads: dict[str, int] = {}
    scopes = {b.scope() for b in _root(func).alloc_buffers or []}
    shares = bool(scopes & set(SHARED_SCOPES))
    inner_blocks = []

    def visit(node):
        nonlocal shares
        if isinstance(node, tir.For) and node.kind == tir.ForKind.THREAD_BINDING:
            tag = node.thread_binding.thread_tag
            if tag.startswith("blockIdx."):
                inner_blocks.append(tag)
            elif tag.startswith("threadIdx."):
                if not isinstance(node.extent, tir.IntImm):
                    raise MergeError(f"a kernel whose {tag} extent is not a constant")
                if threads.setdefault(tag, int(node.extent)) != int(node.extent):
                    raise MergeError(f"a kernel binding {tag} with two extents")
        elif isinstance(node, SBlock):
            scopes.update(b.scope() for b in node.alloc_buffers or [])
            shares = shares or bool(scopes & set(SHARED_SCOPES))
        elif isinstance(node, tir.AllocBuffer):
            scopes.add(node.buffer.scope())
            shares = shares or node.buffer.scope() in SHARED_SCOPES
        elif isinstance(node, Call) and any(w in getattr(node.op, "name", "") for w in THREAD_GROUP_CALLS):
            shares = True

    structural_walk(stmt, visit)
    if not blocks:
        if threads or inner_blocks:
            raise MergeError("a kernel whose blockIdx loops are not the outermost loops")
        return None
    if inner_blocks:
        raise MergeError(f"a kernel binding {inner_blocks[0]} below its threads")
    paddable = (not shares and set(threads) == {"threadIdx.x"} and _bound(stmt, "threadIdx.x")
                and not any(isinstance(n, tir.For) and n.kind == tir.ForKind.THREAD_BINDING
                            for n in _descendants(stmt.body)))
    return Grid(tuple(blocks), stmt, tuple(sorted(threads.items())), paddable,
                tuple(_root(func).alloc_buffers or []), "warp" in scopes)


def _descendants(stmt) -> list:
    found = []
    structural_walk(stmt, (tir.For, found.append))
    return found


def thread_blocks(func: tir.PrimFunc) -> int:
    """The thread blocks a scheduled kernel launches (0 for a CPU kernel or a grid merging refuses)."""
    try:
        g = grid(func)
    except MergeError:
        return 0
    return g.num_blocks if g else 0


def threads_per_block(func: tir.PrimFunc) -> dict[str, int]:
    """threadIdx tag -> extent of a scheduled GPU kernel ({} for a CPU kernel)."""
    g = grid(func)
    return dict(g.threads) if g else {}


def _substitute(stmt, values: dict):
    return structural_map(stmt, (tir.Var, lambda v: values.get(v, v)))


def merge_launches(members: Sequence[Member], name: str, all_warp_buffers_lowered: bool = False) -> tir.PrimFunc:
    """One PrimFunc doing every member's work (see the module); its parameters are every
    member's inputs, in order, then every member's outputs. `all_warp_buffers_lowered`: the
    merged kernel compiles with a pipeline that lowers every warp-scope buffer
    (schedules/warp_memory.py), so members holding tensor-core fragments may share it."""
    if len(members) < 2:
        raise MergeError("fewer than two kernels to merge")
    funcs = [m.func for m in members]
    if any(f.same_as(g) for k, f in enumerate(funcs) for g in funcs[:k]):
        raise MergeError("one kernel given twice")
    inputs = [p for m in members for p in list(m.func.params)[:m.num_inputs]]
    outputs = [p for m in members for p in list(m.func.params)[m.num_inputs:]]
    grids = [grid(f) for f in funcs]
    allocs = []
    if all(g is None for g in grids):  # CPU: one call, the bodies in turn
        body = tir.SeqStmt([_root(f).body for f in funcs])
        allocs = [b for f in funcs for b in (_root(f).alloc_buffers or [])]
    elif any(g is None for g in grids):
        raise MergeError("GPU and CPU kernels cannot share a launch")
    elif sum(g.warp for g in grids) > 1 and not all_warp_buffers_lowered:
        # TVM's LowerWarpMemory lowers the warp buffers of one of them only (the others would
        # stay whole-warp arrays in every thread)
        raise MergeError("two kernels with warp-scope buffers (tensor-core fragments) cannot share a launch")
    else:
        body = _block_ranges(grids)
    root = SBlock([], [], [], "root", body, alloc_buffers=allocs)
    func = tir.PrimFunc(inputs + outputs, SBlockRealize([], tir.const(True, "bool"), root),
                        attrs=funcs[0].attrs)
    return func.with_attr("global_symbol", name)


def _block_ranges(grids: list[Grid]) -> tir.Stmt:
    """The merged grid: one blockIdx.x loop, a binary search over the members' first blocks."""
    bx = tir.Var("bx", "int32")
    padded = all(g.paddable for g in grids)
    if not padded and len({g.threads for g in grids}) > 1:
        shapes = sorted({", ".join(f"{t}={e}" for t, e in g.threads) for g in grids})
        raise MergeError(f"kernels sharing memory between threads launch different threads ({' | '.join(shapes)})")
    tx = tir.Var("tx", "int32") if padded else None
    threads = max(dict(g.threads)["threadIdx.x"] for g in grids) if padded else 0
    starts, total = [], 0
    for g in grids:
        starts.append(total)
        total += g.num_blocks
    works = [_member_work(g, bx, start, tx, threads) for g, start in zip(grids, starts)]

    def search(lo: int, hi: int) -> tir.Stmt:
        if hi - lo == 1:
            return works[lo]
        mid = (lo + hi) // 2
        # the same for every thread of a block: barriers inside a member stay legal
        uniform = tir.call_intrin("bool", "tirx.tvm_thread_invariant", bx < starts[mid])
        return tir.IfThenElse(uniform, search(lo, mid), search(mid, hi))

    body = search(0, len(grids))
    if padded:
        body = tir.For(tx, 0, threads, tir.ForKind.THREAD_BINDING, body,
                       thread_binding=tir.IterVar(None, tx, 1, "threadIdx.x"))
    return tir.For(bx, 0, total, tir.ForKind.THREAD_BINDING, body,
                   thread_binding=tir.IterVar(None, bx, 1, "blockIdx.x"))


def _as(var: tir.Var, dtype: str):
    return var if expr_dtype(var) == dtype else tir.Cast(dtype, var)


def _member_work(g: Grid, bx: tir.Var, start: int, tx: Optional[tir.Var], threads: int) -> tir.Stmt:
    """A member's body with its block indices taken from its block among its own (blockIdx.x
    less `start`) and, padded, its threadIdx.x from the merged one, idle past its own threads."""
    values, stride = {}, 1
    for var, extent in reversed(g.blocks):  # the innermost block loop fastest
        dtype = expr_dtype(var)
        local = _as(bx, dtype) - tir.const(start, dtype) if start else _as(bx, dtype)
        # clamped to the member's own blocks (a no-op in its branch), so TVM's bound analysis
        # sizes its buffers (registers, shared memory, warp fragments) as in its own kernel
        local = tir.min(tir.max(local, tir.const(0, dtype)), tir.const(g.num_blocks - 1, dtype))
        index = local if stride == 1 else tir.floordiv(local, tir.const(stride, dtype))
        values[var] = tir.const(0, dtype) if extent == 1 else (
            index if stride * extent == g.num_blocks else tir.floormod(index, tir.const(extent, dtype)))
        stride *= extent
    if tx is None:
        return _own_block(g, _substitute(g.body, values))
    loop = g.body
    values[loop.loop_var] = _as(tx, expr_dtype(loop.loop_var))
    work = _substitute(loop.body, values)
    if int(loop.extent) < threads:
        work = tir.IfThenElse(tx < int(loop.extent), work, None)
    return _own_block(g, work)


def _own_block(g: Grid, work: tir.Stmt) -> tir.Stmt:
    """The member's work in a block of its own holding its buffers (shared memory, registers):
    TVM places and sizes them within the member's range of blocks as in its own kernel."""
    if not g.allocs:
        return work
    return SBlockRealize([], tir.const(True, "bool"), SBlock([], [], [], "member", work, alloc_buffers=list(g.allocs)))
