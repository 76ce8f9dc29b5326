"""The graph policy of a target's templates: what the graph passes must do so that the kernels
they leave are the ones these templates serve well (tefuse.graph.policy.GraphPolicy). The one
place where template facts (tile sizes, instruction families, the cluster split) reach the graph.
"""
from __future__ import annotations

from ..graph.policy import GraphPolicy
from ..graph.split_k import SplitPolicy
from ..target import DeviceCaps
from .cuda.gemm.cluster import cluster_split
from .cuda.gemm.tiles import MIN_MN

# precisions whose convs and GEMMs the tensor-core templates take channels-last
TENSOR_CORE_PRECISIONS = ("fp16", "bf16", "tf32")
# grouped convs of at most this many groups run dense on the tensor cores (graph/grouped.py): the
# G-fold products cost less there than the direct conv's grouped ones (ResNeXt's 32 groups: its
# last stage's grouped conv 1.3 ms on CUDA cores on the H100)
DENSE_GROUPS = 32


def in_kernel_split(m: int, n: int, depth: int, channels: int, lanes: int, sms: int) -> bool:
    """Whether the wgmma template splits this conv's reduction inside its kernel (cluster.py)."""
    return cluster_split(m, n, depth, channels, lanes, sms) is not None


def graph_policy(caps: DeviceCaps, split_k: int = 0) -> GraphPolicy:
    """The policy for a device: on CUDA, channels-last tensor-core precisions and [N, K] Linear
    weights; with mma.sync (sm_80+), convs and attention as GEMMs and split-K for small grids
    (`split_k`: a forced slice count, 0 for the rule, None for no split); on Hopper, OHWI conv
    weights for wgmma and the cluster splits left to the kernel; with mma.sync, int8 weights
    [N, K] / OHWI (s8 takes both operands K-major) and grouped convs of up to DENSE_GROUPS groups
    computed dense on the tensor cores. Elsewhere the graph stays as imported."""
    if caps.kind != "cuda":
        return GraphPolicy()
    split = None
    if caps.has_mma and split_k is not None:
        split = SplitPolicy(caps.sm_count, MIN_MN, force=split_k,
                            in_kernel=in_kernel_split if caps.has_clusters else None)
    return GraphPolicy(channels_last=TENSOR_CORE_PRECISIONS, gemm_products=caps.has_mma, nk_weights=True,
                       nk_conv_weights=caps.has_wgmma, nk_int8_weights=caps.has_mma, min_mn=MIN_MN,
                       dense_groups=DENSE_GROUPS if caps.has_mma else 0, split=split)
