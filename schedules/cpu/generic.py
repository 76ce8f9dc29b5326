"""Generic CPU schedule for every anchor kind: inline intermediates, parallel outer loops."""
from __future__ import annotations

from tvm import s_tir

from ..space import Config, ConfigSpace

from ..common import inline_all, outer_nests
from ..registry import KernelInfo, Template, register


@register("cpu", "*", "attention")  # attention: the fused op too, so CPU builds check its numerics
class CpuGeneric(Template):
    name = "cpu_generic"
    horizontal = True  # plain grids: may share a launch (codegen/horizontal.py)
    symbolic_extents = True  # loops split with predicated tails; nothing sized from an extent

    def space(self, info: KernelInfo, target) -> ConfigSpace:
        s = ConfigSpace()
        s.define_knob("parallel_loops", [2, 1])
        # appended knobs whose first candidate is the old behaviour, so indices 0/1 keep
        # their meaning; they give the CPU tuning loop (and its tests) a space worth searching
        s.define_knob("unroll", [0, 16, 64, 256])
        s.define_knob("unroll_explicit", [1, 0])
        return s

    def apply(self, sch: s_tir.Schedule, info: KernelInfo, cfg: Config, target) -> None:
        inline_all(sch, info)
        for block in outer_nests(sch):
            loops = sch.get_loops(block)
            iters = sch.get(block).iter_vars
            sp = [l for l, iv in zip(loops, iters) if iv.iter_type == 0]
            # only leading spatial loops may be fused and run in parallel
            lead = []
            for l, iv in zip(loops, iters):
                if iv.iter_type != 0 or len(lead) == cfg["parallel_loops"]:
                    break
                lead.append(l)
            if lead and sp:
                outer = sch.fuse(*lead) if len(lead) > 1 else lead[0]
                sch.parallel(outer)
            else:
                outer = loops[0]
            if cfg.values.get("unroll"):
                sch.annotate(outer, "pragma_auto_unroll_max_step", cfg["unroll"])
                sch.annotate(outer, "pragma_unroll_explicit", cfg["unroll_explicit"])
