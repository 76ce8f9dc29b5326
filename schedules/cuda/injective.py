"""CUDA template for groups with no anchor: elementwise/broadcast/injective chains,
multi-output ones included (their outputs share one loop nest, hence one kernel)."""
from __future__ import annotations

from tvm import s_tir

from ..space import Config, ConfigSpace

from ..common import bind_threads, inline_all, outer_nests
from ..registry import KernelInfo, Template, register


@register("gpu", "injective")
class CudaInjective(Template):
    name = "cuda_injective"

    def space(self, info: KernelInfo, target) -> ConfigSpace:
        s = ConfigSpace()
        s.define_knob("threads", [256, 128, 512, 1024, 64])
        s.define_knob("inner", [1, 2, 4])
        return s

    def apply(self, sch: s_tir.Schedule, info: KernelInfo, cfg: Config, target) -> None:
        inline_all(sch, info)
        for block in outer_nests(sch):
            bind_threads(sch, block, cfg["threads"], cfg["inner"])
