"""CUDA cross-thread reduction template for `reduce`, `softmax`, `norm`, `pool` and `lrn` anchors.

Each output row (one reduced value: a sum/mean/max over axes, a pooling window, a softmax
row) is reduced by `red_threads` threads together: the reduction loops are fused, split
[serial, threads] and the inner part bound to threadIdx.x, which TVM lowers to an
allreduce (warp shuffles, plus a shared-memory stage across warps when there are more
than a warp of threads). Rows spread over blockIdx.x, `rows` of them per block on threadIdx.y.
The fused epilogue (mean's divide, a relu, a cast) runs in the same kernel from the
broadcast result, bound to the same threads.

softmax / log_softmax stay one kernel: max, exp-sum and the output of a row are computed
in one block (the two reduction stages are computed at the row loop, both cross-thread,
their results in registers). layer_norm (anchor `norm`) the same way: sum, centred sum of
squares, output.

`red_threads` of 1 (reduce and pool only) is the serial mode: one thread per row, like the
generic template, `rows` threads per block; it is what the fallback picks for short
windows (3x3 pooling, LRN) and for reductions over outer axes with many rows (NHWC global
pooling, where adjacent threads then read adjacent channels).

Shapes come from the anchor's geometry (rows, extent per row, innermost, whether it is a
window: tefuse.ops' ReduceGeometry, PoolGeometry, LrnGeometry, SoftmaxGeometry); warp size,
threads per block and the SM count from the target (DeviceCaps).
"""
from __future__ import annotations

import logging
from typing import Optional

from tvm import s_tir, tirx

from ...target import DeviceCaps, device_caps
from ..space import Config, ConfigSpace

from ..common import ROWWISE_ANCHORS, annotate_unroll, inline_all, loop_depth, spatial_reduce_loops
from ..registry import KernelInfo, Template, register

log = logging.getLogger(__name__)

CROSS_THREADS = (32, 64, 128, 256, 512, 1024)  # capped by the warp size and the target's threads
SUB_WARP = (8, 16)  # offered when the reduction is shorter than a warp
MAX_ROWS = 256
UNROLL = (0, 16, 64, 256)
# fallback targets
BLOCK_THREADS = 256  # threads per block for cross-thread rows
SERIAL_THREADS = 128  # threads per block in serial mode
# a wave of blocks is one per SM (DeviceCaps.sm_count): fewer, and rows per block shrink
SERIAL_MIN_ROWS = 2048  # serial mode for an outer-axis reduction only with this many rows


def _pow2_ceil(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


def _pow2_floor(n: int) -> int:
    return 1 << (max(1, int(n)).bit_length() - 1)


def reduction_shape(info: KernelInfo) -> tuple[int, int, bool]:
    """(rows, reduction extent per row, whether the reduction covers the innermost input
    axis) of a group, from its anchor's geometry. Only candidate lists and the fallback
    depend on it: `apply` reads the real loop extents."""
    g = info.geometry
    return g.rows, g.extent, g.innermost


def _inner_loops(sch: s_tir.Schedule, block, outer) -> list:
    """The loops of `block` nested below `outer`, unit loops left out."""
    rest = sch.get_loops(block)[loop_depth(sch, block, outer):]
    return [l for l in rest if not _unit(sch.get(l).extent)]


def _unit(extent) -> bool:
    """A loop of one iteration (a symbolic extent, bound at run time, is not known to be one)."""
    return isinstance(extent, tirx.IntImm) and int(extent) == 1


def _spread(sch: s_tir.Schedule, block, outer, threads: int) -> Optional[tuple]:
    """Fuse the non-unit loops of `block` under `outer`, split off `threads` (bound to
    threadIdx.x when > 1); returns (serial loop, thread loop) or None if nothing is left."""
    inner = _inner_loops(sch, block, outer)
    if not inner:
        return None
    fused = sch.fuse(*inner) if len(inner) > 1 else inner[0]
    if threads <= 1:
        return fused, None
    lo, li = sch.split(fused, [None, threads])
    sch.bind(li, "threadIdx.x")
    return lo, li


def rows_split_ok(rows: int, row_dims) -> bool:
    """Whether a row-wise kernel (softmax, layer_norm) can put `rows` rows in a block. Its row
    loops are fused and split by `rows`. Over three row axes (attention's [B, heads, L]), where
    `rows` divides the product of the inner two but not the last, TVM simplifies the statistics
    blocks' bindings (computed at the split loop) into a form it then does not prove
    quasi-affine, and `bind` refuses the schedule: 2 or 4 rows of ViT's [B, 12, 197] (56 of the
    144 softmax configs, the ROCm fallback among them), 4 or 8 of [6, 4, 10]. Such configs are
    refused before they are tried. TVM refuses other splits too, in patterns not captured here
    (a multiple of a short last row extent: 8 rows of [12, 197, 2]; most of four row axes): the
    tuner records those as failed trials, and an untuned build takes fewer rows instead
    (`fallback_alternatives`)."""
    dims = [d for d in row_dims if d > 1]
    if rows <= 1 or len(dims) != 3 or dims[-1] % rows == 0:
        return True
    return (dims[1] * dims[2]) % rows != 0


def _block_rows(rows: int, tx: int, max_threads: int) -> int:
    """The rows a block takes: the config's, capped by the block's thread limit."""
    return max(1, min(rows, max_threads // max(tx, 1)))


def _row_dims(info: KernelInfo) -> list[int]:
    return [s for k, s in enumerate(info.out_shape) if k != info.geometry.axis]


@register("gpu", "reduce", "softmax", "norm", "pool", "lrn")
class CudaCrossThreadReduction(Template):
    name = "cuda_cross_thread_reduction"
    horizontal = True  # plain grids: may share a launch (codegen/horizontal.py)
    symbolic_extents = True  # loops split with predicated tails; nothing sized from an extent

    # -- space ------------------------------------------------------------------------
    def _thread_candidates(self, info: KernelInfo, red: int, lim: DeviceCaps) -> list[int]:
        warp = lim.warp_size
        top = min(max(warp, _pow2_ceil(red)), lim.max_threads_per_block)
        cands = [t for t in CROSS_THREADS if t <= top]
        if red < warp:
            cands += [t for t in SUB_WARP if t < warp and t >= _pow2_ceil(red) // 2]
        if info.anchor_kind not in ROWWISE_ANCHORS:
            cands.append(1)
        return cands

    def space(self, info: KernelInfo, target) -> ConfigSpace:
        rows, red, _ = reduction_shape(info)
        s = ConfigSpace()
        s.define_knob("red_threads", self._thread_candidates(info, red, device_caps(target)))
        top = min(MAX_ROWS, _pow2_ceil(rows))
        s.define_knob("rows", [1 << k for k in range(top.bit_length()) if 1 << k <= top])
        s.define_knob("unroll", UNROLL)
        if info.anchor_kind in ROWWISE_ANCHORS:
            dims, most = _row_dims(info), device_caps(target).max_threads_per_block
            s.constrain(lambda v: rows_split_ok(_block_rows(v["rows"], v["red_threads"], most), dims))
        return s

    def fallback(self, info: KernelInfo, target, space: ConfigSpace) -> Config:
        rows, red, innermost = reduction_shape(info)
        lim = device_caps(target)
        warp = lim.warp_size
        knobs = {k.name: k.candidates for k in space.knobs}
        serial_ok = 1 in knobs["red_threads"]
        if serial_ok and (red < warp if info.geometry.window else red < 8):
            tx = 1  # short windows: a thread per output, as the generic template
        elif serial_ok and not innermost and rows >= SERIAL_MIN_ROWS:
            tx = 1  # outer-axis reduction: adjacent threads read adjacent elements
        elif red < warp:
            tx = min(warp, max(8, _pow2_ceil(red)))  # one sub-warp group per row
        else:
            # a few serial steps per thread; up to a block's most threads when there are few rows
            cap = min(512, lim.max_threads_per_block) if rows >= 64 else lim.max_threads_per_block
            tx = min(cap, max(warp, _pow2_floor(red // 4)))
        tx = max(t for t in knobs["red_threads"] if t <= tx) if tx > 1 else 1
        if tx == 1:
            r = SERIAL_THREADS
        else:
            r = max(1, BLOCK_THREADS // tx)
            floor = max(1, warp // tx)  # at least a warp per block
            while r > floor and -(-rows // r) < lim.sm_count:
                r //= 2
        r = max(c for c in knobs["rows"] if c <= max(r, 1))
        vals = {"red_threads": tx, "rows": r, "unroll": 16 if -(-red // tx) > 1 else 0}
        while vals["rows"] > 1 and not space.admits(space.index_of(vals)):
            vals["rows"] //= 2  # a split TVM refuses (rows_split_ok)
        return space.from_values(vals)

    def fallback_alternatives(self, info: KernelInfo, target, space: ConfigSpace, cfg: Config):
        """Fewer rows a block, down to one: a row split TVM refuses (see rows_split_ok; not every
        pattern is known) is a neighbour's that applies."""
        vals = dict(cfg.values)
        while vals["rows"] > 1:
            vals["rows"] //= 2
            yield space.from_values(vals)

    # -- apply ------------------------------------------------------------------------
    def apply(self, sch: s_tir.Schedule, info: KernelInfo, cfg: Config, target) -> None:
        tx = int(cfg["red_threads"])
        rows = _block_rows(int(cfg["rows"]), tx, device_caps(target).max_threads_per_block)
        inline_all(sch, info)
        if info.anchor_kind in ROWWISE_ANCHORS:
            self._apply_rowwise(sch, info, tx, rows, cfg["unroll"])
        else:
            self._apply_single(sch, info, tx, rows, cfg["unroll"])

    def _bind_rows(self, sch: s_tir.Schedule, row, tx: int, rows: int):
        """Rows over blockIdx.x and (rows per block) threadIdx.y, or threadIdx.x in serial
        mode; returns the loop a row's work is attached under."""
        if rows > 1:
            bx, r = sch.split(row, [None, rows])
            sch.bind(bx, "blockIdx.x")
            sch.bind(r, "threadIdx.x" if tx == 1 else "threadIdx.y")
            return r
        sch.bind(row, "blockIdx.x")
        return row

    def _apply_single(self, sch: s_tir.Schedule, info: KernelInfo, tx: int, rows: int, unroll: int) -> None:
        """reduce / pool: one reduction block plus its elementwise epilogue."""
        if len(info.reduce_blocks) != 1:
            raise ValueError(f"expected one reduction block, got {info.reduce_blocks}")
        anchor = info.reduce_blocks[0]
        block = sch.get_sblock(anchor)
        sp, rd = spatial_reduce_loops(sch, block)
        if not sp:  # reduction to a scalar: a unit row loop to hang the epilogue on
            sp = [sch.add_unit_loop(sch.get_loops(block)[0])]
        else:
            sch.reorder(*sp, *rd)
        row = sch.fuse(*sp) if len(sp) > 1 else sp[0]
        red = sch.fuse(*rd) if len(rd) > 1 else rd[0]
        if tx > 1:
            serial, lane = sch.split(red, [None, tx])
            sch.bind(lane, "threadIdx.x")
        else:
            serial = red
        row = self._bind_rows(sch, row, tx, rows)
        annotate_unroll(sch, serial, unroll)

        epilogue = [b for b in info.output_blocks if b != anchor]
        if anchor in info.output_blocks:
            # the anchor accumulates in registers; a write-back block stores the result
            wb = sch.cache_write(block, 0, "local")
            sch.reverse_compute_at(wb, row)
            _spread(sch, wb, row, tx)
        else:
            sch.set_scope(block, 0, "local")
        for name in epilogue:
            b = sch.get_sblock(name)
            sch.reverse_compute_at(b, row)
            _spread(sch, b, row, tx)

    def _apply_rowwise(self, sch: s_tir.Schedule, info: KernelInfo, tx: int, rows: int, unroll: int) -> None:
        """softmax / layer_norm: per row, the two reductions then the output, in one thread block."""
        out_name = info.output_blocks[0]
        out = sch.get_sblock(out_name)
        loops = sch.get_loops(out)
        ax = info.geometry.axis
        row_loops = [l for k, l in enumerate(loops) if k != ax]
        col = loops[ax]
        if row_loops:
            sch.reorder(*row_loops, col)
            row = sch.fuse(*row_loops) if len(row_loops) > 1 else row_loops[0]
        else:  # 1-D softmax: a single row
            row = sch.add_unit_loop(col)
        row = self._bind_rows(sch, row, tx, rows)
        _spread(sch, out, row, tx)
        for name in info.output_blocks[1:]:
            b = sch.get_sblock(name)
            sch.reverse_compute_at(b, row)
            _spread(sch, b, row, tx)
        # consumers first: the exp-sum reads the max
        for name in reversed(info.reduce_blocks):
            b = sch.get_sblock(name)
            sch.compute_at(b, row)
            sch.set_scope(b, 0, "local")
            parts = _spread(sch, b, row, tx)
            if parts is not None:
                annotate_unroll(sch, parts[0], unroll)
