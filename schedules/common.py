"""Schedule steps shared by templates."""
from __future__ import annotations

import math
import re
from typing import Optional

import tvm
from tvm import s_tir, tirx
from tvm_ffi import structural_equal

from .registry import DATA, WEIGHT, KernelInfo

THREAD_AXES = ("threadIdx.z", "threadIdx.y", "threadIdx.x")
# anchors computed row by row with dependent reductions and an output per row (softmax's max then
# exp-sum; layer_norm's sum then centred sum of squares): one block a row, nothing fused after
ROWWISE_ANCHORS = ("softmax", "norm")
_ALLOC = r'T\.sblock_alloc_buffer\(\(([\d,\s]*)\)(?:,\s*"(\w+)")?(?:,\s*strides=\(([\d,\s]*)\))?,\s*scope="{}"\)'
_SCOPED_ALLOC = {scope: re.compile(_ALLOC.format(scope)) for scope in ("shared", "local")}


def symbolic_batch_only(info: KernelInfo) -> bool:
    """Whether a conv's symbolic extents are its batch alone (axis 0 of its data and output, its
    weight fixed): a template that binds the batch to the grid, its tiles over the fixed axes,
    schedules it as at any batch."""
    data, *rest = info.symbolic_in or ((),)
    return set(data) <= {0} and set(info.symbolic_out) <= {0} and not any(rest)


def symbolic_rows_only(info: KernelInfo) -> bool:
    """Whether a GEMM's symbolic extents are its rows alone (M and batch axes: not the data's
    last axis, K, nor the output's, N; the weight fixed)."""
    data, *rest = info.symbolic_in or ((),)
    rank_in, rank_out = len(info.in_shapes[0]) if info.in_shapes else 0, len(info.out_shape)
    return (rank_in - 1 not in data and rank_out - 1 not in info.symbolic_out and not any(rest))


def largest_divisor(n: int, cap: int) -> int:
    """The largest divisor of n not above cap (at least 1): perfect tiling for fallbacks."""
    return max(d for d in range(1, max(1, min(n, cap)) + 1) if n % d == 0)


def dtype_bytes(dtype: str) -> int:
    bits = "".join(c for c in dtype if c.isdigit())
    return max(1, int(bits or 32) // 8)


def alloc_bytes(mod: tvm.IRModule, compacted: Optional[str] = None) -> dict[str, int]:
    """Bytes a scheduled module allocates per scope ("shared": per block; "local": per thread),
    with buffers compacted to the regions accessed as lowering will (TVM may keep more than a
    tile when an index is not affine, e.g. a floordiv by a depthwise channel multiplier, or a
    batched GEMM's padded rows). One compaction serves every scope. The printed TVMScript is
    read: TVM 0.27 has no Python TIR visitor. `compacted`: compacted_script(mod), where the
    caller has it."""
    script = compacted if compacted is not None else compacted_script(mod)
    totals = {}
    for scope, pattern in _SCOPED_ALLOC.items():
        total = 0
        for shape, dtype, strides in pattern.findall(script):
            dims = [int(d) for d in shape.split(",") if d.strip()]
            elems = math.prod(dims)
            if strides and dims:  # padded rows (storage_align): the outermost stride spans a row
                elems = max(elems, dims[0] * int(strides.split(",")[0]))
            total += elems * dtype_bytes(dtype or "float32")
        totals[scope] = total
    return totals


def compacted_script(mod: tvm.IRModule) -> str:
    """The module's TVMScript with its buffers compacted to the regions accessed, as lowering
    will compact them."""
    passes = s_tir.transform
    return tvm.ir.transform.Sequential([
        passes.LowerInitBlock(), passes.PlanAndUpdateBufferAllocationLocation(),
        passes.ConvertBlocksToOpaque(), passes.CompactBufferAllocation()])(mod).script()


_SCOPED_ALLOC_LINE = re.compile(r'(\w+) = T\.sblock_alloc_buffer\((.*)scope="(shared|local)')
_CONSTANT = re.compile(r"T\.int64\(\d+\)|\d+")


def _first_argument(text: str) -> str:
    """The text of the first parenthesized argument of `text` (a shape tuple), nesting kept."""
    depth = 0
    for i, c in enumerate(text):
        depth += (c == "(") - (c == ")")
        if depth == 0:
            return text[:i + 1]
    return text


def sized_at_run_time(compacted: str) -> list[str]:
    """The shared and local buffers of a scheduled module (its `compacted_script`) whose
    compacted size depends on a dim bound at run time, as "name (scope)": a tile following a
    symbolic extent's predicated tail. TVM's CUDA codegen cannot allocate them."""
    return [f"{name} ({scope})" for name, args, scope in _SCOPED_ALLOC_LINE.findall(compacted)
            if re.search(r"[A-Za-z_]", _CONSTANT.sub("", _first_argument(args)))]


def shared_alloc_bytes(mod: tvm.IRModule) -> int:
    """Bytes of shared memory a block of a scheduled module allocates (alloc_bytes)."""
    return alloc_bytes(mod)["shared"]


_BINDING = re.compile(r'T\.thread_binding\((?:0,\s*)?(\d+),\s*thread="([\w.]+)"')


def launch_extents(script: str) -> dict[str, float]:
    """Largest extent bound to each thread tag (threadIdx.x, blockIdx.y, vthread...) in a
    scheduled module's TVMScript."""
    ext: dict[str, float] = {}
    for extent, tag in _BINDING.findall(script):
        ext[tag] = max(ext.get(tag, 1.0), float(extent))
    return ext


def block_threads(script: str) -> int:
    return int(math.prod(v for k, v in launch_extents(script).items() if k.startswith("threadIdx")))


def implicit_gemm_maps(g):
    """A conv as its implicit GEMM: index maps taking the output block's (n, k, y, x) / (n, y, x, k)
    iterators to (m, k) and the conv block's to (m, k, r), with m = n*OH*OW + y*OW + x and r the
    reduction in the weight's memory order (c, ky, kx for OIHW; ky, kx, c for HWIO)."""
    ohw, ow, c, kh, kw = g.oh * g.ow, g.ow, g.c, g.kh, g.kw
    if g.layout == "NCHW":
        return ((lambda n, k, y, x: (n * ohw + y * ow + x, k)),
                (lambda n, k, y, x, rc, ry, rx: (n * ohw + y * ow + x, k, rc * kh * kw + ry * kw + rx)))
    return ((lambda n, y, x, k: (n * ohw + y * ow + x, k)),
            (lambda n, y, x, k, ry, rx, rc: (n * ohw + y * ow + x, k, ry * kw * c + rx * c + rc)))


def to_implicit_gemm(sch: s_tir.Schedule, info: KernelInfo, g, epilogue) -> tuple:
    """Turn the conv anchor into its implicit GEMM (`implicit_gemm_maps`): its output and the
    `epilogue` blocks iterate [M, K], the conv (m, k, r); its data and weight reads become the
    staged A[m, r] and B[k, r] fills, with the staged producers inlined into them. Returns
    (a_fill, b_fill)."""
    out_map, conv_map = implicit_gemm_maps(g)
    conv = sch.get_sblock(info.anchor_block)
    sch.transform_layout(conv, ("write", 0), out_map)
    sch.transform_block_layout(conv, conv_map)
    for name in epilogue:
        sch.transform_block_layout(sch.get_sblock(name), out_map)
    a_fill = sch.reindex(conv, ("read", read_index(sch, conv, info.operands[DATA])))
    b_fill = sch.reindex(conv, ("read", read_index(sch, conv, info.operands[WEIGHT])))
    for name in info.staged(DATA, WEIGHT):
        sch.compute_inline(sch.get_sblock(name))
    return a_fill, b_fill


def loop_depth(sch: s_tir.Schedule, block, loop) -> int:
    """How many loops enclose `block` down to and including `loop`."""
    target = sch.get_sref(loop)
    for k, l in enumerate(sch.get_loops(block)):
        if sch.get_sref(l).same_as(target):
            return k + 1
    raise ValueError("loop does not enclose block")


def cooperative_fetch(sch: s_tir.Schedule, cache, depth: int, threads, axes=THREAD_AXES) -> None:
    """Let every thread of the block fill a staged tile: fuse the cache block's loops below
    `depth` and bind them to the block's thread axes (innermost last)."""
    inner = sch.get_loops(cache)[depth:] or [sch.add_unit_loop(cache)]
    fused = sch.fuse(*inner) if len(inner) > 1 else inner[0]
    parts = sch.split(fused, factors=[None, *threads])
    for loop, axis in zip(parts[1:], axes):
        sch.bind(loop, axis)


def annotate_unroll(sch: s_tir.Schedule, loop, max_step: int, explicit: int = 1) -> None:
    if max_step:
        sch.annotate(loop, "pragma_auto_unroll_max_step", max_step)
        sch.annotate(loop, "pragma_unroll_explicit", explicit)


def inline_all(sch: s_tir.Schedule, info: KernelInfo, keep=()) -> None:
    """Inline every intermediate stage except those in `keep`."""
    for name in info.inline_blocks:
        if name not in keep:
            sch.compute_inline(sch.get_sblock(name))


def spatial_reduce_loops(sch: s_tir.Schedule, block) -> tuple[list, list]:
    loops = sch.get_loops(block)
    iters = sch.get(block).iter_vars
    sp = [l for l, iv in zip(loops, iters) if iv.iter_type == 0]
    rd = [l for l, iv in zip(loops, iters) if iv.iter_type != 0]
    return sp, rd


def epilogue_blocks(sch: s_tir.Schedule, info: KernelInfo, anchor: str) -> list[str]:
    """Output blocks other than the anchor (they read it, so they go after it)."""
    return [b for b in info.output_blocks if b != anchor]


def attach_epilogue(sch: s_tir.Schedule, info: KernelInfo, anchor: str, loop, scope: str) -> None:
    """Compute the epilogue under `loop`; the anchor's result stays in `scope` (registers).

    When the anchor itself is a group output, a write-back block copies it out under `loop`.
    """
    block = sch.get_sblock(anchor)
    if anchor in info.output_blocks:
        writeback = sch.cache_write(block, 0, scope)  # the anchor now accumulates in `scope`
        sch.reverse_compute_at(writeback, loop)
    else:
        sch.set_scope(block, 0, scope)
    for name in epilogue_blocks(sch, info, anchor):
        sch.reverse_compute_at(sch.get_sblock(name), loop)


def outer_nests(sch: s_tir.Schedule) -> list:
    """One block per top-level loop nest (blocks of a multi-output compute share a nest)."""
    root = sch.get_sblock("root")
    seen, out = [], []
    for b in sch.get_child_blocks(root):
        loops = sch.get_loops(b)
        if not loops:
            continue
        sref = sch.get_sref(loops[0])
        if any(sref.same_as(s) for s in seen):
            continue
        seen.append(sref)
        out.append(b)
    return out


def read_index(sch: s_tir.Schedule, block, buffer_name: str) -> int:
    for k, region in enumerate(sch.get(block).reads):
        if region.source.name == buffer_name:
            return k
    raise KeyError(f"block {sch.get(block).name_hint} reads no buffer {buffer_name}")


def bind_threads(sch: s_tir.Schedule, block, threads: int, inner: int = 1, vector: bool = False):
    """Fuse a block's loops and bind them to blockIdx.x / threadIdx.x, `inner` elements a thread
    (unrolled; or, `vector`, one vector of them where the innermost extent holds whole vectors,
    so that a thread's elements are consecutive and aligned: 16-bit outputs then store 16 bytes a
    thread, not 2). Returns the threadIdx.x loop where a thread stores a vector, else None."""
    loops = sch.get_loops(block)
    extent = sch.get(loops[-1]).extent
    if inner > 1 and vector and isinstance(extent, tirx.IntImm) and extent.value % inner == 0:
        return _bind_vectors(sch, block, threads, inner)
    fused = sch.fuse(*loops) if len(loops) > 1 else loops[0]
    if inner > 1:
        bx, tx, ii = sch.split(fused, [None, threads, inner])
        sch.unroll(ii)
    else:
        bx, tx = sch.split(fused, [None, threads])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    return None


def bind_channels(sch: s_tir.Schedule, block, threads: int, axis: int) -> None:
    """A thread computes every element along loop `axis` (a pixel's channels, unrolled), the
    other loops fused and bound as bind_threads does: what the channels share (a resampling
    window's coordinates and source loads) is computed once a thread, not once a channel."""
    loops = sch.get_loops(block)
    rest = [lp for i, lp in enumerate(loops) if i != axis]
    sch.reorder(*rest, loops[axis])
    fused = sch.fuse(*rest) if len(rest) > 1 else rest[0]
    bx, tx = sch.split(fused, [None, threads])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    sch.unroll(loops[axis])


def _bind_vectors(sch: s_tir.Schedule, block, threads: int, lanes: int):
    """A thread computes `lanes` consecutive outputs into registers, one by one as before, then
    stores them as one vector. (The computation is not vectorized: a pad's guarded loads would
    make TVM scalarize it into a loop of branches, and a ReLU's select over 8 halves is a boolx8
    that TVM's CUDA codegen cannot print.)"""
    store = sch.cache_write(block, 0, "local")
    *outer, last = sch.get_loops(block)
    last, lane = sch.split(last, [None, lanes])  # whole vectors: the grid's tail guard is lane-free
    fused = sch.fuse(*outer, last) if outer else last
    bx, tx = sch.split(fused, [None, threads])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    sch.unroll(lane)
    _load_vectors(sch, block, tx)
    sch.reverse_compute_at(store, tx)
    sch.vectorize(sch.get_loops(store)[-1])
    return tx


def _load_vectors(sch: s_tir.Schedule, block, tx) -> None:
    """Each input the block reads at its output's own index (an elementwise operand of the
    output's shape) loaded a vector a thread into registers under `tx`, not element by element:
    an int8 QuantizeLinear's 8 halves in one 16-byte load instead of eight 2-byte ones."""
    blk = sch.get(block)
    out = blk.writes[0]
    inner = [w.source for p in sch.get_producers(block) for w in sch.get(p).writes]
    same = [k for k, r in enumerate(blk.reads)
            if not any(r.source.same_as(b) for b in inner)  # a kernel input, not a stage (a concat's pick)
            and list(r.source.shape) == list(out.source.shape) and r.source.dtype != "bool"
            and all(structural_equal(a.min, b.min) and structural_equal(a.extent, b.extent)
                    for a, b in zip(r.region, out.region))]
    for k in reversed(same):  # cache_read renumbers nothing before k
        load = sch.cache_read(block, k, "local")
        sch.compute_at(load, tx)
        sch.vectorize(sch.get_loops(load)[-1])
