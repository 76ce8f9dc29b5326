"""CUDA template for groups with no anchor: elementwise/broadcast/injective chains,
multi-output ones included (their outputs share one loop nest, hence one kernel)."""
from __future__ import annotations

import math

from tvm import s_tir, tirx

from ...target import device_caps
from ..space import Config, ConfigSpace

from ..common import bind_channels, bind_threads, dtype_bytes, inline_all, outer_nests
from ..registry import KernelInfo, Template, register
from .lanes import (MAX_BOOL_LANES, MAX_VECTOR_BYTES, bool_lanes_vary, branches_uniform, lanes_contiguous,
                    stores_contiguous, widest_value_bytes)


def vector_pick(sch: s_tir.Schedule, pick, thread, lanes: int) -> bool:
    """Compute a pick stage (a concat: KernelInfo.pick_stages) under the thread whose vector its
    consumer stores, one vector into registers, where its lanes load consecutive, aligned
    elements of one input: every concatenated segment a multiple of the vector along the
    vector's axis (DenseNet's 64 + 32 + 32... channels, NHWC). Its branch is then taken once a
    vector and its loads are 16 bytes, not one branch chain and 2-byte load a lane. False, with
    the stage left in registers for the caller to inline, where it cannot be."""
    sch.compute_at(pick, thread)
    sch.set_scope(pick, 0, "local")
    loops = sch.get_loops(pick)
    below = loops[[sch.get(lp).same_as(sch.get(thread)) for lp in loops].index(True) + 1:]
    extents = [sch.get(lp).extent for lp in below]
    if not below or not all(isinstance(e, tirx.IntImm) for e in extents) \
            or extents[-1].value != lanes or math.prod(e.value for e in extents) != lanes:
        return False
    inner = below[-1]
    if (not branches_uniform(sch, pick, inner, lanes)
            or widest_value_bytes(sch, pick, uniform_branches=True) * lanes > MAX_VECTOR_BYTES
            or (lanes > MAX_BOOL_LANES and bool_lanes_vary(sch, pick, inner, lanes))
            or not lanes_contiguous(sch, pick, inner, lanes)):
        return False
    sch.vectorize(inner)
    return True


def pixel_axis(info: KernelInfo):
    """The innermost axis of the (one) output whose extent is 2-4 (a pixel's channels: NCHW's C,
    NHWC's C), the batch axis excluded where others exist; None without one."""
    if len(info.output_shapes) != 1:
        return None
    shape = info.output_shapes[0]
    axes = [a for a, d in enumerate(shape) if 2 <= d <= 4 and (a > 0 or len(shape) == 3)]
    return axes[-1] if axes else None


def threads_filling(items: int, target) -> int:
    """256 threads a block, or 128 or 64 where that leaves fewer than two blocks an SM: a small
    kernel (a batch-1 pad, a pre-processing pipeline's few thousand pixels) is bound by the
    latency of each thread's chain of loads and by instruction issue, both of which more SMs
    share; 71 blocks of 256 leave half an H100 idle."""
    want = 2 * device_caps(target).sm_count
    return next((t for t in (256, 128) if -(-items // t) >= want), 64)


@register("gpu", "injective")
class CudaInjective(Template):
    name = "cuda_injective"
    horizontal = True  # plain grids: may share a launch (codegen/horizontal.py)
    symbolic_extents = True  # loops split with predicated tails; nothing sized from an extent

    def space(self, info: KernelInfo, target) -> ConfigSpace:
        s = ConfigSpace()
        s.define_knob("threads", [256, 128, 512, 1024, 64])
        s.define_knob("inner", [1, 2, 4, 8])
        # unrolled first: the records written before this knob existed (tuning_logs) mean it
        s.define_knob("vector", [False, True], implied_first=True)
        # a vector of at most 16 bytes, and not of bools (TVM stores 4 one-byte bools as a ushort4)
        width = 0 if info.dtype == "bool" else dtype_bytes(info.dtype)
        s.constrain(lambda v: not v["vector"] or 1 < v["inner"] and 0 < v["inner"] * width <= MAX_VECTOR_BYTES)
        # a pixel's channels a thread (pixel_axis), so that they share its coordinates and loads
        s.define_knob("pixel", [False, True], implied_first=True)
        has_pixel = pixel_axis(info) is not None
        s.constrain(lambda v: not v["pixel"] or has_pixel and v["inner"] == 1 and not v["vector"])
        return s

    def fallback(self, info: KernelInfo, target, space: ConfigSpace) -> Config:
        """256 threads; a 16-bit output (fp16/bf16 models: ResNet's input pad to paired 4-channel
        pixels) stores one 16-byte vector a thread where its rows hold whole vectors, not one
        2-byte element (the ResNet-50 stem's pad at batch 16: 10.0 us one element a thread, 4.1 a
        vector; ResNet-50 b32's input kernel 22.0 -> 9.3 us; H100), in
        blocks small enough to give every SM two: at batch 1 the pad's 25088 vectors would fill
        only 98 blocks of 256 on 132 SMs (its time alone is at the per-launch floor of the
        kernel timer either way; the b1 bench stayed 0.82x cuDNN). Wider outputs keep one
        element a thread (a warp already stores 128 bytes an instruction)."""
        axis = pixel_axis(info)
        if info.samples and axis is not None:
            # a resampling pipeline: a thread's channels share the window's coordinates and
            # source loads, which one channel a thread computes three times over
            threads = 256
            if not info.symbolic:
                shape = info.output_shapes[0]
                threads = threads_filling(math.prod(shape) // shape[axis], target)
            return space.from_values({"threads": threads, "inner": 1, "vector": False, "pixel": True})
        itemsize = dtype_bytes(info.dtype)
        # a one-byte output (an int8 QuantizeLinear of an fp16 value) takes 8 lanes: 16-byte
        # loads of its 2-byte input
        lanes = MAX_VECTOR_BYTES // max(itemsize, 2)
        if (device_caps(target).kind == "cuda" and itemsize <= 2 and info.dtype != "bool"  # ROCm: not measured
                and len(info.output_blocks) == 1
                # rows of whole vectors: a fixed last axis (a run-time batch before it splits off whole rows)
                and info.out_shape and len(info.out_shape) - 1 not in info.symbolic_out
                and info.out_shape[-1] % lanes == 0):
            threads = threads_filling(math.prod(info.out_shape) // lanes, target)
            return space.from_values({"threads": threads, "inner": lanes, "vector": True})
        return space.get(0)

    def fallback_alternatives(self, info: KernelInfo, target, space: ConfigSpace, cfg: Config):
        """One element a thread, where a kernel's vectors do not apply (a nest TVM will not cache
        or re-attach)."""
        if cfg.index != 0:
            yield space.get(0)

    def apply(self, sch: s_tir.Schedule, info: KernelInfo, cfg: Config, target) -> None:
        picks = list(info.pick_stages) if cfg["vector"] else []
        inline_all(sch, info, keep=picks)
        nests = [b for b in outer_nests(sch) if sch.get(b).name_hint not in picks]
        # a vector a thread through registers: a kernel of one block only (a multi-output nest's
        # blocks share its loops), whose lanes store consecutive, aligned elements
        alone = len(nests) == 1 and len(sch.get_child_blocks(sch.get_sblock("root"))) == 1 + len(picks)
        axis = pixel_axis(info) if cfg["pixel"] and alone else None
        thread = None
        for block in nests:
            if axis is not None:
                bind_channels(sch, block, cfg["threads"], axis)
                continue
            vector = (cfg["vector"] and alone
                      and stores_contiguous(sch, block, sch.get_loops(block)[-1], int(cfg["inner"])))
            thread = bind_threads(sch, block, cfg["threads"], cfg["inner"], vector)
        for name in reversed(picks):  # a pick's consumers first: it goes where they are
            pick = sch.get_sblock(name)
            if thread is None or not vector_pick(sch, pick, thread, int(cfg["inner"])):
                sch.compute_inline(pick)

