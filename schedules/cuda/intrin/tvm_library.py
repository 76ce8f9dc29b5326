"""TVM's own CUDA tensor intrinsics (mma.sync, wmma, ldmatrix; `tvm.s_tir.tensor_intrin.cuda`),
which register themselves when their module is imported: imported here, once, with TVMScript's
frame walk kept short (schedules/intrin.py), so the first tensor-core kernel of a process does
not wait half a minute for it."""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import Optional

from ...intrin import quick_frames

MODULE = "tvm.s_tir.tensor_intrin.cuda"
_module: Optional[ModuleType] = None  # once imported whole: every tensor-core schedule asks


def tvm_cuda_intrinsics() -> ModuleType:
    """The imported module (its intrinsics registered): get_mma_intrin_group,
    get_wmma_intrin_group, shared_16x16_to_ldmatrix_32x8_layout..."""
    global _module
    if _module is None:
        with quick_frames():
            _module = importlib.import_module(MODULE)
    return _module
