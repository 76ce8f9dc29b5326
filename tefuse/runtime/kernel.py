"""A compiled kernel: one fused group's module, what it was built from, and how to call it."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import tvm

from ..errors import BuildError
from ..fusion import FusedGroup
from ..graph.ir import Node


@dataclass
class CompiledKernel:
    """One fused group, compiled: call it with input then output tensors."""

    group: FusedGroup
    params: list[Node]
    outputs: list[Node]
    module: tvm.runtime.Module
    tir: str
    workload: str
    template: str
    config_index: int
    config_source: str
    build_seconds: float
    from_cache: bool = False
    device_source: str = ""  # CUDA/HIP source as generated: a module loaded from a library lacks it
    library: Optional[bytes] = field(default=None, repr=False)  # the library a loaded module came
    # from (kernel cache, artefact): saving it again copies these bytes, as TVM cannot re-export it
    _fn: Optional[tuple] = field(default=None, init=False, repr=False, compare=False)

    @property
    def function(self):
        """The kernel's entry, looked up once per module: a lookup costs about as much as a
        small launch."""
        if self._fn is None or self._fn[0] is not self.module:
            self._fn = (self.module, self.module["main"])
        return self._fn[1]

    def __call__(self, *args) -> None:
        self.function(*args)

    def source(self, kind: str = "cuda") -> str:
        """Generated device source ('cuda'), host/LLVM IR ('llvm') or lowered TIR ('tir').

        For ROCm the kernel is the device module (TVM's kind "hip", built through LLVM, no C
        source): 'asm' (or 'rocm') is its AMDGPU assembly and 'llvm' its LLVM IR."""
        if kind == "tir":
            return self.tir
        mods = [self.module, *getattr(self.module, "imports", [])]
        amd = [m for m in mods if m.kind in ("hip", "rocm")]
        if amd and kind in ("asm", "rocm", "hip"):
            return self.device_source or amd[0].inspect_source("asm")
        if amd and kind == "llvm":
            return amd[0].inspect_source("llvm")
        for m in mods:
            if kind in ("cuda", "rocm") and m.kind == kind:
                return self.device_source or m.inspect_source()
            if kind in ("llvm", "asm") and m.kind == "llvm":
                return m.inspect_source("asm" if kind == "asm" else "ll")
        raise BuildError(f"kernel {self.group.name} has no {kind!r} source (modules: {[m.kind for m in mods]})")
