"""The TIR lowering of wgmma kernels whose passes run after TVM has lowered the blocks: TVM 0.27's
default s_tir pipeline (s_tir_main.py) with tefuse's passes after LowerOpaqueBlock (the buffers not
yet flattened, the host and device parts not yet split), and hoist.py's pipelines otherwise:
- `cluster_sum.InjectClusterSum`: cluster split-K's sum through distributed shared memory;
- `row_sums.InjectRowSums`: the float8 row sums a k loop with a batch in flight keeps.
Each pass leaves a kernel without its marks unchanged. `gemm/template.pass_config` names
PIPELINE for the wgmma kernels that need it."""
from __future__ import annotations

import tvm

from .cluster_sum import InjectClusterSum
from .hoist import pipeline_factory as hoist_pipeline_factory
from .row_sums import InjectRowSums
from .s_tir_main import main_pipeline

PIPELINE = "tefuse_cuda_wgmma_late"


def _pipeline_factory(**_):
    _main, host, device = hoist_pipeline_factory()
    return main_pipeline(after_lower_opaque=(InjectClusterSum, InjectRowSums)), host, device


tvm.tirx.compilation_pipeline.register_tir_pipeline(PIPELINE, _pipeline_factory)
