"""The one compile path: (lowered func, template, config, target) -> scheduled module -> compiled module.

`build()` (on its threads) and the tuning builder (in worker processes) both come through
here, so a config over the target's limits is refused the same way, by name, in
milliseconds, before the device compiler is asked.
"""
from __future__ import annotations

import re

from dataclasses import dataclass
from typing import Optional

import tvm
from tvm import s_tir

from ..errors import BuildError
from ..schedules import KernelInfo, Template
from ..schedules.registry import TIR_PIPELINE
from ..schedules.common import alloc_bytes, block_threads, compacted_script, launch_extents, sized_at_run_time
from ..schedules.space import Config
from .let_to_local import PIPELINE as DEFAULT_PIPELINE
from .float8 import lower_float8


@dataclass(frozen=True)
class KernelSpec:
    """What to compile: an unscheduled func, what lowering found in it, and how to schedule it."""

    name: str  # the group's name, for messages
    func: tvm.tirx.PrimFunc
    info: KernelInfo
    template: Template
    config: Config


# CUDA's grid: blockIdx.x up to 2^31 - 1, y and z up to 65535 (a launch past them fails at run time)
CUDA_GRID_LIMITS = {"blockIdx.x": 2**31 - 1, "blockIdx.y": 65535, "blockIdx.z": 65535}
# registers and spills a thread may hold: a tile's accumulators take a few hundred bytes to 4 KB, so a
# local buffer past this is one that did not compact to its tile (a whole batched GEMM's output,
# 2 MB a thread, failed to launch: CUDA_ERROR_INVALID_VALUE)
MAX_LOCAL_BYTES = 16 * 1024


def check_limits(mod: tvm.IRModule, target: tvm.target.Target) -> None:
    """Refuse a scheduled module over the target's threads or shared memory per block, over
    CUDA's grid, with a local buffer that did not compact to a thread's tile, or with a shared
    or local buffer sized by a dim bound at run time."""
    if target.kind.name == "llvm":
        return
    script = mod.script()
    max_threads = target.attrs.get("max_threads_per_block")
    if max_threads:
        threads = block_threads(script)
        if threads > int(max_threads):
            raise BuildError(f"{threads} threads per block > {int(max_threads)}")
    if target.kind.name == "cuda":
        extents = launch_extents(script)
        for tag, cap in CUDA_GRID_LIMITS.items():
            if extents.get(tag, 1) > cap:
                raise BuildError(f"{int(extents[tag])} blocks along {tag} > CUDA's {cap}")
    try:
        compacted = compacted_script(mod)
    except Exception as e:  # noqa: BLE001 - TVM's compaction fails on some run-time-sized regions
        first = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
        raise BuildError(f"its buffers do not compact to the regions accessed ({first[:200]})") from None
    dynamic = sized_at_run_time(compacted)
    if dynamic:
        raise BuildError(f"{', '.join(dynamic)} sized by a dim bound at run time (a tile following a "
                         "symbolic extent's predicated tail)")
    allocated = alloc_bytes(mod, compacted)
    max_shared = target.attrs.get("max_shared_memory_per_block")
    if max_shared and allocated["shared"] > int(max_shared):
        raise BuildError(f"{allocated['shared']} bytes of shared memory per block > {int(max_shared)}")
    local = allocated["local"]
    if local > MAX_LOCAL_BYTES:
        raise BuildError(f"{local} bytes of local memory per thread > {MAX_LOCAL_BYTES} (a buffer kept whole, "
                         "not a thread's tile)")


def kernel_target(spec: KernelSpec, target: tvm.target.Target) -> tvm.target.Target:
    """What this kernel is scheduled, checked and compiled for (the template may ask for an
    arch-specific variant of `target`, as wgmma configs ask for sm_90a)."""
    return spec.template.compile_target(spec.info, spec.config, target)


def schedule_kernel(spec: KernelSpec, target: tvm.target.Target) -> tvm.IRModule:
    """Apply the template's config and check the result against the target's limits."""
    target = kernel_target(spec, target)
    try:
        sch = s_tir.Schedule(spec.template.prepare(spec.func, spec.info, spec.config, target),
                             enable_check=spec.template.schedule_checks(spec.info, spec.config))
        spec.template.apply(sch, spec.info, spec.config, target)
        mod = spec.template.finish(sch.mod, spec.info, spec.config, target)
    except Exception as e:  # noqa: BLE001 - ScheduleError, TVM FFI errors, template bugs
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise BuildError(f"group {spec.name}: template {spec.template.name} "
                         f"config #{spec.config.index} failed to apply: {first}") from e
    try:
        check_limits(mod, target)
    except BuildError as e:
        raise BuildError(f"group {spec.name}: template {spec.template.name} config #{spec.config.index}: "
                         f"{e}") from None
    return mod


# TVM's common-subexpression pass, on a kernel whose expressions bind buffer loads with Lets,
# can use one of its variables before defining it (BERT's embeddings over symbolic dims); such a
# kernel is compiled again with the pass off
CSE_FAILURE = "has been used before definition"


def device_compile(mod: tvm.IRModule, target: tvm.target.Target, pass_config: Optional[dict] = None
                   ) -> tvm.runtime.Module:
    """TVM's codegen and the device compiler, errors as TVM raises them."""
    config = dict(pass_config or {})
    pipeline = config.pop(TIR_PIPELINE, DEFAULT_PIPELINE)
    mod = lower_float8(mod, target)
    try:
        return _tvm_compile(mod, target, pipeline, config)
    except Exception as e:  # noqa: BLE001 - TVM raises many kinds
        if CSE_FAILURE not in str(e) or config.get("tirx.disable_cse_tir"):
            raise
        return _tvm_compile(mod, target, pipeline, {**config, "tirx.disable_cse_tir": True})


def _tvm_compile(mod: tvm.IRModule, target: tvm.target.Target, pipeline: str, config: dict) -> tvm.runtime.Module:
    if config:
        with target, tvm.transform.PassContext(opt_level=3, config=config):
            return tvm.compile(mod, target=target, tir_pipeline=pipeline).mod
    with target:
        return tvm.compile(mod, target=target, tir_pipeline=pipeline).mod


def compile_module(mod: tvm.IRModule, target: tvm.target.Target, name: str = "",
                   pass_config: Optional[dict] = None) -> tvm.runtime.Module:
    """Codegen and the device compiler, failures named by group; safe on several threads at once."""
    try:
        return device_compile(mod, target, pass_config)
    except Exception as e:  # noqa: BLE001 - TVM raises many kinds; name the group
        # (NVRTC's log ends in a NUL; nvcc says "error:" and "catastrophic error:")
        msg = [ln for ln in str(e).replace("\x00", "").strip().splitlines() if ln.strip()]
        hint = ""
        if target.kind.name == "rocm":  # say which piece of the ROCm toolchain is missing
            from ..target import rocm_toolchain

            problems = rocm_toolchain().problems
            hint = f" (ROCm toolchain: {'; '.join(problems)})" if problems else ""
        # the device compiler's last line counts errors; its first error lines say which
        first = [ln.strip()[:200] for ln in msg[:-1]
                 if re.search(r"\berror\b:", ln) and not ln.lstrip().startswith("Compilation error")][:2]
        raise BuildError(f"group {name}: compiling for {target.kind.name} failed: "
                         f"{msg[-1] if msg else type(e).__name__}{hint}"
                         + "".join(f" | {ln}" for ln in first)) from e


def compile_kernel(spec: KernelSpec, target: tvm.target.Target) -> tuple[tvm.IRModule, tvm.runtime.Module]:
    """Schedule, check and compile in one call (what a tuning build worker runs)."""
    mod = schedule_kernel(spec, target)
    return mod, compile_module(mod, kernel_target(spec, target), spec.name, pass_config(spec, target))


def pass_config(spec: KernelSpec, target: tvm.target.Target) -> dict:
    return spec.template.pass_config(spec.info, spec.config, target)


def device_source(module: tvm.runtime.Module) -> str:
    """The generated device code of a freshly compiled module ("" for host-only targets):
    CUDA C for CUDA; for ROCm (TVM's AMDGPU backend goes through LLVM, and its module kind is
    "hip"), the AMDGPU assembly of the code object."""
    for m in module.imports:
        if m.kind == "cuda":
            return m.inspect_source()
        if m.kind in ("hip", "rocm"):
            return m.inspect_source("asm")
    return ""
