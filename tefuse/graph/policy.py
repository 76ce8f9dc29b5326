"""What the target's templates want of a graph, as data: the graph passes read a GraphPolicy
instead of importing templates or parsing the target. `schedules.graph_policy(caps)` makes one;
`GraphPolicy()` (every field off) leaves a graph as imported, what a CPU build wants."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .split_k import SplitPolicy


@dataclass(frozen=True)
class GraphPolicy:
    """channels_last: the precisions whose convs the templates want NHWC (`layout.auto_layout`).
    gemm_products: the tensor-core templates take convs and attention as GEMMs (small convs
    patched into products, attention's key rows padded to whole vectors). nk_weights: Linears read
    their constant weight as [N, K]; nk_conv_weights: NHWC convs read theirs as OHWI
    (graph/weights.py); nk_int8_weights: int8 products read theirs [N, K] / OHWI. min_mn: the
    smallest M and N a tensor-core tile takes (a GEMV below it).
    dense_groups: grouped convs of at most this many groups are computed dense on a
    block-diagonal weight (graph/grouped.py), 0 for none.
    split: the graph's split-K rules, None where the templates want none."""

    channels_last: tuple[str, ...] = ()
    gemm_products: bool = False
    nk_weights: bool = False
    nk_conv_weights: bool = False
    nk_int8_weights: bool = False
    min_mn: int = 0
    dense_groups: int = 0
    split: Optional[SplitPolicy] = None
