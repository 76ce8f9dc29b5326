"""A compiled kernel: one fused group's module, what it was built from, and how to call it."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union

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


@dataclass
class SplitKernel:
    """A kernel's size variant computed as a split-K pair (fusion/split_groups.py): `partial`
    writes its product's float32 partial sums into a scratch tensor, `total` adds them up with
    the kernel's epilogue. Called as the kernel it stands for is (its parameters, then its
    outputs), with the scratch appended; `picks[j]` are the positions in that list each of the
    two takes. scratch_shape: what the scratch is allocated at, the partials at the largest
    sizes the variant serves; a run views it at its own sizes."""

    group: FusedGroup  # the kernel's group: the variant stands for it
    partial: CompiledKernel
    total: CompiledKernel
    picks: tuple[tuple[int, ...], tuple[int, ...]]
    scratch_shape: tuple[int, ...]
    _fn: Optional[tuple] = field(default=None, init=False, repr=False, compare=False)

    @property
    def parts(self) -> tuple[CompiledKernel, CompiledKernel]:
        return self.partial, self.total

    @property
    def scratch(self) -> Node:
        """The partials' value (its shape holds the symbolic dims)."""
        return self.partial.outputs[0]

    @property
    def template(self) -> str:
        return f"{self.partial.template}+{self.total.template}"

    @property
    def config_index(self) -> int:
        return self.partial.config_index

    @property
    def config_source(self) -> str:
        return self.partial.config_source

    @property
    def function(self):
        """Both kernels, each given its part of the arguments (made once per pair of modules)."""
        mods = (self.partial.module, self.total.module)
        if self._fn is None or any(a is not b for a, b in zip(self._fn[0], mods)):
            (pa, pt), (fa, ft) = self.picks, (self.partial.function, self.total.function)

            def run(*argv):
                fa(*[argv[i] for i in pa])
                ft(*[argv[i] for i in pt])

            self._fn = (mods, run)
        return self._fn[1]

    def __call__(self, *args) -> None:
        self.function(*args)

    def source(self, kind: str = "cuda") -> str:
        return "\n".join(k.source(kind) for k in self.parts)


def split_picks(params: list[Node], outputs: list[Node], partial: CompiledKernel,
                total: CompiledKernel) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """SplitKernel.picks: where each of the pair's parameters and outputs lies in the argument
    list of the kernel it stands for (`params`, `outputs`) with the scratch appended. The pair
    reads the kernel's own parameters; the total's outputs are the kernel's, in order."""
    where = {id(n): i for i, n in enumerate(params)}
    scratch = len(params) + len(outputs)
    first = tuple(where[id(p)] for p in partial.params) + (scratch,)
    second = tuple(scratch if p is partial.outputs[0] else where[id(p)] for p in total.params)
    return first, second + tuple(len(params) + j for j in range(len(outputs)))


Variant = Union[CompiledKernel, SplitKernel]  # what a kernel runs as in a size bucket


def variant_identity(v: Variant) -> tuple:
    """What tells one variant's code from another's: its module, a split pair's two modules and
    its scratch (two pairs may share the partials' module and differ in the rest)."""
    if isinstance(v, SplitKernel):
        return id(v.partial.module), id(v.total.module), v.scratch_shape
    return (id(v.module),)
