"""Every "warp"-scope buffer of a kernel lowered to registers, where TVM 0.27 lowers one.

TVM's LowerWarpMemory rewrites the first warp allocation of a statement sequence and takes the
rest of the sequence as that buffer's scope, without looking inside it again: a second fragment
buffer (mma.sync's and MFMA's A and B operands beside their accumulators, or the accumulators of
tensor-core kernels sharing one launch, codegen/horizontal.py) stays a whole-warp array in every
thread, 32 or 64 times its size in local memory. `LowerAllWarpMemory` runs the pass until no warp allocation is left: each run
lowers the first one still marked warp. Pipelines built with it are named in
LOWERS_ALL_WARP_BUFFERS, which tells the horizontal merge that kernels holding fragments may
share a launch when they compile with one of them.
"""
from __future__ import annotations

import tvm
from tvm import tirx
from tvm_ffi import VisitInterrupt, structural_walk

MAX_RUNS = 16  # warp buffers of one kernel: a merged launch's members each bring theirs
LOWERS_ALL_WARP_BUFFERS: set[str] = set()


def holds_warp_buffer(func: tirx.PrimFunc) -> bool:
    found = structural_walk(func.body, (tirx.AllocBuffer,
                                        lambda a: VisitInterrupt(a) if a.buffer.scope() == "warp" else None))
    return found is not None


@tvm.transform.module_pass(opt_level=0, name="tefuse.LowerAllWarpMemory")
def LowerAllWarpMemory(mod, _ctx):  # noqa: N802 - TVM's pass naming
    lower = tirx.transform.LowerWarpMemory()
    for _ in range(MAX_RUNS):
        if not any(isinstance(f, tirx.PrimFunc) and holds_warp_buffer(f) for f in mod.functions.values()):
            break
        mod = lower(mod)
    return mod
