"""TVM 0.27's default s_tir lowering (tvm/s_tir/pipeline.py, default_s_tir_pipeline's first part)
with places for tefuse's passes: after LowerOpaqueBlock (the buffers not yet flattened, the host and
device parts not yet split) and just before InjectPTXAsyncCopy (the copies vectorized, their
async scopes still marked). With neither, it is TVM's list, pass for pass."""
from __future__ import annotations

from typing import Sequence

import tvm
from tvm import s_tir, tirx


def main_pipeline(after_lower_opaque: Sequence = (), before_async_copy: Sequence = ()):
    """The main lowering pass, as default_s_tir_pipeline builds it, with the given passes added."""

    @tvm.transform.module_pass(opt_level=0)
    def _pipeline(mod, _ctx):
        config = tvm.transform.PassContext.current().config
        t = s_tir.transform
        async_copy = bool(config.get("tirx.use_async_copy", False))
        ldg32 = bool(config.get("tirx.s_tir.ldg32", False))
        passes = [t.CanonicalizeLoop(), t.LowerCrossThreadReduction(), t.LowerInitBlock(),
                  t.PlanAndUpdateBufferAllocationLocation(), t.ConvertBlocksToOpaque(), t.LiftThreadBinding(),
                  t.ManifestSharedMemoryLocalStage(), t.CompactBufferAllocation(), t.LowerAutoCopy(),
                  t.UnifyThreadBinding(), t.LowerMatchBuffer(), t.StmtSimplify(), t.InjectPermutedLayout(),
                  t.AnnotateIrregularLoop(), t.InjectSoftwarePipeline(), t.TransformMmaBufferLayout(),
                  t.LowerOpaqueBlock(), *after_lower_opaque,
                  tirx.transform.FlattenBuffer(), tirx.transform.BF16ComputeLegalize(),
                  tirx.transform.NarrowDataType(32), t.LoopPartition(),
                  tirx.transform.VectorizeLoop(not bool(config.get("tirx.disable_vectorize", False))),
                  t.InjectVirtualThread(), t.InjectDoubleBuffer()]
        if not bool(config.get("tirx.disable_storage_rewrite", False)):
            passes.append(tirx.transform.StorageRewrite())
        if async_copy:
            passes.append(t.LowerAsyncDMA())
        passes += [t.HoistIfThenElse(), tirx.transform.UnrollLoop(), t.RenormalizeSplitPattern(),
                   tirx.transform.StmtSimplify(), tirx.transform.RemoveNoOp(), t.RewriteUnsafeSelect()]
        if bool(config.get("tirx.instrument_bound_checkers", False)):
            passes.append(t.InstrumentBoundCheckers())
        if ldg32:
            passes.append(t.InjectPTXLDG32(True))
        if not bool(config.get("tirx.disable_cse_tir", False)):
            passes.append(tirx.transform.CommonSubexprElim())
        if bool(config.get("tirx.instrument_lwp", False)):
            passes.append(t.InstrumentProfileIntrinsics())
        passes += [tirx.transform.FP8ComputeLegalize(), t.VerifyVTCMLimit(), t.LowerVtcmAlloc(),
                   tirx.transform.VerifyMemory(), tirx.transform.AnnotateEntryFunc(),
                   t.ThreadSync("shared"), t.ThreadSync("shared.dyn"), t.ThreadSync("warp"),
                   t.InferFragment(), t.LowerThreadAllreduce()]
        if async_copy:
            passes += [*before_async_copy, t.InjectPTXAsyncCopy()]
        if ldg32:
            passes.append(t.InjectPTXLDG32())
        passes += [t.MergeSharedMemoryAllocations(), tirx.transform.SplitHostDevice(),
                   tirx.transform.MakePackedAPI(), tirx.transform.FP8StorageLegalize(),
                   tirx.transform.BF16StorageLegalize()]
        return tvm.ir.transform.Sequential(passes)(mod)

    return _pipeline
