"""Window pooling (max_pool2d, avg_pool2d) in NHWC for the GPU family: one thread per output
position and a vector of channels.

NHWC keeps the channels innermost, so a thread that owns output (n, y, x) and channels
[c, c + vec) reads each window tap as one vector (8 fp16 channels: 16 bytes) and a warp reads
32 such vectors side by side: every load is coalesced, every input element is read once per
window that covers it (a 3x3/stride-2 pool: about 2.25 times, mostly from L2), and the output is
written once, `vec` channels per store. The window loop runs in registers (the accumulator is a
`vec`-long local array), the fused epilogue (avg's divide, max's order-key decode, a ReLU, a
cast) is computed in the same thread, and there is no cross-thread reduction: a window of 9 taps
is far too short to split over threads (the cross-thread reduction template's serial mode gives a
thread one output channel, so its loads are 2 bytes wide).

Lanes whose computation makes a boolean that differs between them (max pooling's NaN-propagating
order keys are selects on the loaded values) are vectorized at most 4 wide, the widest bool vector
TVM's CUDA codegen prints; a thread's remaining channels are unrolled. Loads are vectorized only
where the lanes read consecutive, aligned elements (a prologue that changes the layout gathers,
and stays scalar), and the same for the output's stores.

Knobs: `vec` (channels per thread, reduced to a power of two dividing C), `threads` (per block),
`unroll` (the window loops). Global pools (the whole plane as window) are accepted but left to
the cross-thread reduction template untuned: their windows are long and their outputs few.
"""
from __future__ import annotations

from tvm import s_tir

from ...options import DEFAULT, BuildOptions
from ...target import device_caps
from ..common import inline_all, loop_depth, spatial_reduce_loops, symbolic_batch_only
from ..registry import KernelInfo, Template, register
from ..space import Config, ConfigSpace
from .lanes import (MAX_BOOL_LANES, MAX_VECTOR_BYTES, bool_lanes_vary, lanes_contiguous, stores_contiguous,
                    widest_value_bytes)

VECS = (8, 4, 2, 1)  # channels per thread (8 fp16 = 16 bytes; 4 fp32 = 16 bytes)
THREADS = (256, 128, 512, 64)
UNROLL = (64, 0, 16)
MIN_BLOCKS_PER_SM = 2  # the fallback shrinks vec, then threads, until the grid fills the GPU this much


def _pow2_divisor(n: int, cap: int) -> int:
    v = cap
    while v > 1 and n % v:
        v //= 2
    return max(v, 1)


def _vec_bytes(dtype: str) -> int:
    bits = "".join(ch for ch in str(dtype) if ch.isdigit())
    return max(1, int(bits or 32) // 8)


def _is_window(info: KernelInfo) -> bool:
    """A pool with a kernel attribute (max_pool2d, avg_pool2d), not a global one."""
    return "kernel" in info.attrs


@register("gpu", "pool")
class CudaWindowPool(Template):
    name = "cuda_window_pool"
    horizontal = True  # plain grids: may share a launch (codegen/horizontal.py)

    def accepts(self, info: KernelInfo) -> bool:
        g = info.geometry
        return (g is not None and getattr(g, "layout", None) == "NHWC" and len(info.reduce_blocks) == 1
                and len(info.out_shape) == 4)

    def takes_symbolic(self, info: KernelInfo) -> bool:
        """A symbolic batch: fused with the fixed pixels and channel vectors into the grid, its
        tail predicated (a dynamic ResNet-50's max pool had fallen to the cross-thread reduction)."""
        return symbolic_batch_only(info)

    def preference(self, info: KernelInfo, target, options: BuildOptions = DEFAULT) -> int:
        # ahead of the cross-thread reduction template (preference 0) for window pools
        return 5 if _is_window(info) else -5

    def space(self, info: KernelInfo, target) -> ConfigSpace:
        c = int(info.out_shape[-1])
        s = ConfigSpace()
        vecs = sorted({_pow2_divisor(c, v) for v in VECS}, reverse=True)
        s.define_knob("vec", vecs)
        lim = device_caps(target)
        s.define_knob("threads", [t for t in THREADS if t <= lim.max_threads_per_block])
        s.define_knob("unroll", list(UNROLL))
        return s

    def fallback(self, info: KernelInfo, target, space: ConfigSpace) -> Config:
        """16 bytes of channels per thread, 256 threads a block; fewer channels per thread, then
        smaller blocks, while the grid would not give every SM two blocks (a small batch)."""
        knobs = {k.name: k.candidates for k in space.knobs}
        n, oh, ow, c = (int(d) for d in info.out_shape)
        # the widest vector the lanes compute in: 16 bytes of the input, and of avg's float32
        # sums; max's order keys are selects, 4 lanes (see _lanes). A thread's channels are one
        # such vector: 4 fp16 (8-byte loads) or 4 fp32 (16-byte loads)
        want = max(1, min(MAX_VECTOR_BYTES // max(_vec_bytes(info.dtype), 4), MAX_BOOL_LANES))
        vec = max([v for v in knobs["vec"] if v <= want] or [min(knobs["vec"])])
        threads = 256 if 256 in knobs["threads"] else knobs["threads"][0]
        sms = device_caps(target).sm_count

        def blocks(v, t):
            return -(-(n * oh * ow * (c // v)) // t)

        smaller_vecs = [v for v in knobs["vec"] if v < vec]
        while blocks(vec, threads) < MIN_BLOCKS_PER_SM * sms and smaller_vecs and vec > 2:
            vec = smaller_vecs.pop(0)
        smaller_threads = sorted((t for t in knobs["threads"] if t < threads), reverse=True)
        while blocks(vec, threads) < MIN_BLOCKS_PER_SM * sms and smaller_threads:
            threads = smaller_threads.pop(0)
        return space.from_values({"vec": vec, "threads": threads, "unroll": 64})

    def apply(self, sch: s_tir.Schedule, info: KernelInfo, cfg: Config, target) -> None:
        on_gpu = getattr(getattr(target, "kind", None), "name", target) != "llvm"  # llvm: same loops, unbound
        inline_all(sch, info)
        anchor = info.reduce_blocks[0]
        block = sch.get_sblock(anchor)
        epilogue = [b for b in info.output_blocks if b != anchor]
        stored = anchor in info.output_blocks  # an integer max pool: no order keys to decode
        if stored:  # cached before the loops are split, so the write-back keeps the output's exact
            # domain and is predicated at tx as an epilogue block is (cached after, its domain was
            # the grid's padded extent, unpredicated: on llvm a grid of 512 threads over 288
            # outputs stored past the output's end)
            epilogue = [sch.get(sch.cache_write(block, 0, "local")).name_hint] + epilogue
        sp, rd = spatial_reduce_loops(sch, block)
        if len(sp) != 4:
            raise ValueError(f"expected an NHWC pool block with 4 spatial loops, got {len(sp)}")
        c_ext = int(sch.get(sp[-1]).extent)
        vec = _pow2_divisor(c_ext, int(cfg["vec"]))
        co, ci = sch.split(sp[-1], [None, vec])
        sch.reorder(*sp[:-1], co, *rd, ci)
        fused = sch.fuse(*sp[:-1], co)
        bx, tx = sch.split(fused, [None, int(cfg["threads"])])
        if on_gpu:
            sch.bind(bx, "blockIdx.x")
            sch.bind(tx, "threadIdx.x")
        if cfg["unroll"] and rd:
            sch.annotate(rd[0], "pragma_auto_unroll_max_step", int(cfg["unroll"]))
            sch.annotate(rd[0], "pragma_unroll_explicit", 1)

        if not stored:  # the accumulator: `vec` registers per thread
            sch.set_scope(block, 0, "local")
        self._lanes(sch, block, ci, vec, loads=True)
        if rd:
            # the accumulator's init is register moves, unrolled: a vectorized init of 8 fp16
            # order keys (int16x8) is printed by TVM's CUDA codegen as make_int4 of 8 shorts
            init = sch.decompose_reduction(block, rd[0])
            sch.unroll(sch.get_loops(init)[-1])
        for name in epilogue:
            b = sch.get_sblock(name)
            sch.reverse_compute_at(b, tx)
            inner = [lp for lp in sch.get_loops(b)[loop_depth(sch, b, tx):] if int(sch.get(lp).extent) != 1]
            if not inner:
                continue
            lane = sch.fuse(*inner) if len(inner) > 1 else inner[0]
            self._lanes(sch, b, lane, vec, store=True)

    @staticmethod
    def _lanes(sch: s_tir.Schedule, block, loop, vec: int, loads: bool = False, store: bool = False) -> None:
        """Vectorize `loop` (a thread's channels) as wide as is legal, unroll the rest."""
        ext = int(sch.get(loop).extent)
        width = min(vec, ext)
        while width > 1 and ext % width:
            width //= 2
        while width > 1 and width * widest_value_bytes(sch, block) > MAX_VECTOR_BYTES:
            width //= 2  # fp16 averaged in float32: 4 lanes
        if width > MAX_BOOL_LANES and bool_lanes_vary(sch, block, loop, width):
            width = MAX_BOOL_LANES  # max pooling's NaN-propagating order keys are selects
        while width > 1 and loads and not lanes_contiguous(sch, block, loop, width):
            width //= 2
        while width > 1 and store and not stores_contiguous(sch, block, loop, width):
            width //= 2
        if width <= 1:
            if ext > 1:
                sch.unroll(loop)
            return
        if width < ext:
            outer, loop = sch.split(loop, [None, width])
            sch.unroll(outer)
        sch.vectorize(loop)
