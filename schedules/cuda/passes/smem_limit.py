"""A device pass that refuses a kernel whose dynamic shared memory, as TVM merged it, is past what
its arch lets a block opt into (`SMEM_OPTIN`).

Why here: `check_limits` reads the scheduled module, before TVM merges the shared.dyn buffers
(a staging tile reusing the pipeline's tiles), so it cannot size them; such a kernel would
compile and then fail at launch. Here the merged allocation is one buffer of known bytes, and the
failure is a build error that names the sizes (a tuner skips the config)."""
from __future__ import annotations

import math

import tvm
from tvm import tirx
from tvm_ffi import structural_walk

from ....target import SMEM_OPTIN, device_caps
from ...common import dtype_bytes


def dyn_shared_bytes(func: tirx.PrimFunc) -> int:
    """Bytes of the function's shared.dyn allocations."""
    sizes = []

    def visit(n):
        if isinstance(n, tirx.AllocBuffer) and n.buffer.scope() == "shared.dyn":
            sizes.append(math.prod(int(d) for d in n.buffer.shape) * dtype_bytes(str(n.buffer.dtype)))

    structural_walk(func.body, visit)
    return sum(sizes)


@tvm.tirx.transform.prim_func_pass(opt_level=0, name="tefuse.CheckDynamicShared")
def CheckDynamicShared(func, _mod, _ctx):  # noqa: N802 - TVM's pass naming
    target = func.attrs.get("target") if func.attrs else None
    caps = device_caps(target) if target is not None else None
    if caps is None or caps.arch not in SMEM_OPTIN:  # an arch whose limit is unknown: not checked
        return func
    need = dyn_shared_bytes(func)
    if need > caps.smem_optin:
        raise ValueError(f"{need} bytes of dynamic shared memory per block > {caps.arch}'s {caps.smem_optin}")
    return func
