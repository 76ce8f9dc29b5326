"""The names of one mma.sync GEMM's intrinsics, as the bf16 and int8 modules register them:
`mma_ldmatrix_<operand>_a[_dyn]`, `mma_<operand><operand><acc>[_trans_b]`, ... (a `_dyn` load
reads dynamic shared memory; `b_nk`: B stored [N, K])."""
from __future__ import annotations


def mma_group(operand: str, acc: str, load_scope: str, store_scope: str, b_nk: bool) -> dict[str, str]:
    sfx = "_dyn" if load_scope == "shared.dyn" else ""
    trans = "_trans" if b_nk else ""
    return {
        "init": f"mma_fill_16x16_{acc}",
        "load_a": f"mma_ldmatrix_{operand}_a{sfx}",
        "load_b": f"mma_ldmatrix_{operand}_b{trans}{sfx}",
        "compute": f"mma_{operand}{operand}{acc}{'_trans_b' if b_nk else ''}",
        "store": f"mma_store_16x16_{acc}_{store_scope.replace('.', '_')}_simple_",
    }
