"""Generic CUDA template for reductions (dense, pooling, reduce, softmax): one thread per
output element, epilogue computed in the same thread from a register."""
from __future__ import annotations

from tvm import s_tir

from ..space import Config, ConfigSpace

from ..common import ROWWISE_ANCHORS, attach_epilogue, bind_threads, inline_all, outer_nests, spatial_reduce_loops
from ..registry import KernelInfo, Template, register


@register("gpu", "*")
class CudaGenericReduction(Template):
    name = "cuda_generic_reduction"
    horizontal = True  # plain grids: may share a launch (codegen/horizontal.py)
    symbolic_extents = True  # loops split with predicated tails; nothing sized from an extent

    def space(self, info: KernelInfo, target) -> ConfigSpace:
        s = ConfigSpace()
        s.define_knob("threads", [128, 64, 256, 512])
        s.define_knob("unroll", [0, 16, 64])
        return s

    def apply(self, sch: s_tir.Schedule, info: KernelInfo, cfg: Config, target) -> None:
        inline_all(sch, info)
        fused_epilogue = len(info.reduce_blocks) == 1 and info.anchor_kind not in ROWWISE_ANCHORS
        if fused_epilogue:
            block = sch.get_sblock(info.reduce_blocks[0])
            sp, rd = spatial_reduce_loops(sch, block)
            sch.reorder(*sp, *rd)
            fused = sch.fuse(*sp) if len(sp) > 1 else sp[0]
            bx, tx = sch.split(fused, [None, cfg["threads"]])
            sch.bind(bx, "blockIdx.x")
            sch.bind(tx, "threadIdx.x")
            if cfg["unroll"] and rd:
                sch.annotate(rd[0], "pragma_auto_unroll_max_step", cfg["unroll"])
            attach_epilogue(sch, info, info.reduce_blocks[0], tx, "local")
            return
        for block in outer_nests(sch):
            sp, rd = spatial_reduce_loops(sch, block)
            if rd:
                sch.reorder(*sp, *rd)
                fused = sch.fuse(*sp) if len(sp) > 1 else sp[0]
                bx, tx = sch.split(fused, [None, cfg["threads"]])
                sch.bind(bx, "blockIdx.x")
                sch.bind(tx, "threadIdx.x")
            else:
                bind_threads(sch, block, cfg["threads"])
