"""int8 mma.sync m16n8k32 (sm_80 and later, int32 accumulation): the ldmatrix and store intrinsics
TVM 0.27 registers for shared memory only, made for dynamic shared memory too, from TVM's own
generators (ldmatrix moves bytes whatever their type; the fragments of a 16x32 int8 tile hold 16
values a lane)."""
from __future__ import annotations

from functools import partial

from ...intrin import register_once
from .mma_names import mma_group
from .tvm_library import tvm_cuda_intrinsics

_SCOPES = (("shared", ""), ("shared.dyn", "_dyn"))


def _ldmatrix(operand: str, trans: bool, scope: str):
    return tvm_cuda_intrinsics().get_ldmatrix_intrin(32, "int8", operand, trans, scope)


def _store(scope: str):
    return tvm_cuda_intrinsics().get_mma_store_intrin("int32", 8, scope, False)


def register() -> None:
    """Register the int8 loads and the int32 stores (the first call in a process makes them)."""
    for scope, sfx in _SCOPES:
        register_once(f"mma_ldmatrix_i8_a{sfx}", partial(_ldmatrix, "A", False, scope))
        register_once(f"mma_ldmatrix_i8_b{sfx}", partial(_ldmatrix, "B", False, scope))
        register_once(f"mma_ldmatrix_i8_b_trans{sfx}", partial(_ldmatrix, "B", True, scope))
        register_once(f"mma_store_16x16_i32_{scope.replace('.', '_')}_simple_", partial(_store, scope))


def int8_mma_group(load_scope: str, store_scope: str, b_nk: bool) -> dict[str, str]:
    """The intrinsics of an int8 x int8 -> int32 mma.sync GEMM (the m16n16k32 tile: two m16n8k32)."""
    register()
    return mma_group("i8", "i32", load_scope, store_scope, b_nk)
