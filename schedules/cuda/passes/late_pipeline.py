"""The TIR lowering of wgmma kernels whose passes run after TVM has lowered the blocks: TVM 0.27's
default s_tir pipeline with tefuse's passes after LowerOpaqueBlock (the buffers not yet flattened,
the host and device parts not yet split), and hoist.py's host and device pipelines:
- `cluster_sum.InjectClusterSum`: cluster split-K's sum through distributed shared memory.
Each pass leaves a kernel without its marks unchanged. `gemm/template.pass_config` names
PIPELINE for the wgmma kernels that need it."""
from __future__ import annotations

import tvm
from tvm import s_tir, tirx

from .cluster_sum import InjectClusterSum
from .hoist import pipeline_factory as hoist_pipeline_factory

PIPELINE = "tefuse_cuda_wgmma_late"


def _main_pipeline():
    """TVM 0.27's default s_tir lowering (tvm/s_tir/pipeline.py) with tefuse's passes after
    LowerOpaqueBlock."""

    @tvm.transform.module_pass(opt_level=0)
    def _pipeline(mod, _ctx):
        config = tvm.transform.PassContext.current().config
        t = s_tir.transform
        passes = [t.CanonicalizeLoop(), t.LowerCrossThreadReduction(), t.LowerInitBlock(),
                  t.PlanAndUpdateBufferAllocationLocation(), t.ConvertBlocksToOpaque(), t.LiftThreadBinding(),
                  t.ManifestSharedMemoryLocalStage(), t.CompactBufferAllocation(), t.LowerAutoCopy(),
                  t.UnifyThreadBinding(), t.LowerMatchBuffer(), t.StmtSimplify(), t.InjectPermutedLayout(),
                  t.AnnotateIrregularLoop(), t.InjectSoftwarePipeline(), t.TransformMmaBufferLayout(),
                  t.LowerOpaqueBlock(), InjectClusterSum,
                  tirx.transform.FlattenBuffer(), tirx.transform.BF16ComputeLegalize(),
                  tirx.transform.NarrowDataType(32), t.LoopPartition(),
                  tirx.transform.VectorizeLoop(not bool(config.get("tirx.disable_vectorize", False))),
                  t.InjectVirtualThread(), t.InjectDoubleBuffer()]
        if not bool(config.get("tirx.disable_storage_rewrite", False)):
            passes.append(tirx.transform.StorageRewrite())
        if config.get("tirx.use_async_copy", False):
            passes.append(t.LowerAsyncDMA())
        passes += [t.HoistIfThenElse(), tirx.transform.UnrollLoop(), t.RenormalizeSplitPattern(),
                   tirx.transform.StmtSimplify(), tirx.transform.RemoveNoOp(), t.RewriteUnsafeSelect()]
        if not bool(config.get("tirx.disable_cse_tir", False)):
            passes.append(tirx.transform.CommonSubexprElim())
        passes += [tirx.transform.FP8ComputeLegalize(), t.VerifyVTCMLimit(), t.LowerVtcmAlloc(),
                   tirx.transform.VerifyMemory(), tirx.transform.AnnotateEntryFunc(),
                   t.ThreadSync("shared"), t.ThreadSync("shared.dyn"), t.ThreadSync("warp"),
                   t.InferFragment(), t.LowerThreadAllreduce()]
        if config.get("tirx.use_async_copy", False):
            passes.append(t.InjectPTXAsyncCopy())
        passes += [t.MergeSharedMemoryAllocations(), tirx.transform.SplitHostDevice(),
                   tirx.transform.MakePackedAPI(), tirx.transform.FP8StorageLegalize(),
                   tirx.transform.BF16StorageLegalize()]
        return tvm.ir.transform.Sequential(passes)(mod)

    return _pipeline


def _pipeline_factory(**_):
    _main, host, device = hoist_pipeline_factory()
    return _main_pipeline(), host, device


tvm.tirx.compilation_pipeline.register_tir_pipeline(PIPELINE, _pipeline_factory)
