"""Batch profiles: one compiled graph per batch size, chosen at run time by the inputs' shapes.

Why: kernels are compiled for fixed shapes, but a served model sees several batch sizes.
As TensorRT's optimization profiles do (kept simple: exact batch sizes, no ranges), a
`ProfiledGraph` holds one `CompiledGraph` per batch size and `run` picks the one whose input
shapes equal the given inputs'. An input that matches no profile is one error naming the shapes
given and the batch sizes there are.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from ..errors import TefuseError
from .executor import CompiledGraph


class NoMatchingProfile(TefuseError, ValueError):
    """The inputs' shapes match none of a ProfiledGraph's batch profiles."""


@dataclass(frozen=True)
class Profile:
    """One batch size and the graph compiled for it."""

    batch: int
    graph: CompiledGraph


def _dims(shape: Sequence[int]) -> str:
    return "x".join(map(str, shape)) or "scalar"


def _shape_of(v: Any) -> Optional[tuple[int, ...]]:
    shape = getattr(v, "shape", None)
    if shape is None:
        try:
            shape = np.shape(v)
        except Exception:  # noqa: BLE001 - anything np.shape cannot read is the executor's to refuse
            return None
    return tuple(int(d) for d in shape)


@dataclass(frozen=True)
class ProfiledGraph:
    """Compiled graphs of one model, one per batch size (ascending); `run` dispatches on the
    inputs' shapes. Built by `tefuse.build({batch: graph, ...})`, saved into one artefact."""

    profiles: tuple[Profile, ...]

    def __post_init__(self) -> None:
        if not self.profiles:
            raise TefuseError("a ProfiledGraph needs at least one profile")
        batches = [p.batch for p in self.profiles]
        if len(set(batches)) != len(batches):
            raise TefuseError(f"batch sizes given twice: {batches}")
        object.__setattr__(self, "profiles", tuple(sorted(self.profiles, key=lambda p: p.batch)))
        names = {tuple(i.name for i in p.graph.graph.inputs) for p in self.profiles}
        if len(names) != 1:
            raise TefuseError(f"the profiles' graphs have different inputs: {sorted(names)}")

    # -- what it holds ----------------------------------------------------------------------
    @property
    def batch_sizes(self) -> tuple[int, ...]:
        return tuple(p.batch for p in self.profiles)

    @property
    def target(self):
        return self.profiles[0].graph.target

    @property
    def num_kernels(self) -> int:
        """Kernels of all profiles together."""
        return sum(p.graph.num_kernels for p in self.profiles)

    def profile(self, batch: int) -> CompiledGraph:
        """The graph compiled for `batch`; NoMatchingProfile names the batch sizes there are."""
        for p in self.profiles:
            if p.batch == batch:
                return p.graph
        raise NoMatchingProfile(f"no profile for batch {batch}; built for batch sizes {self._listed()}")

    def summary(self) -> str:
        return "\n".join(f"batch {p.batch}: {p.graph.summary()}" for p in self.profiles)

    def source(self, kind: Optional[str] = None) -> str:
        return "\n".join(f"// ==== batch {p.batch} ====\n{p.graph.source(kind)}" for p in self.profiles)

    def _listed(self) -> str:
        return ", ".join(map(str, self.batch_sizes))

    def _input_forms(self) -> list[tuple[str, tuple]]:
        """Each input's shape, its leading dim shown as N where the profiles differ in it."""
        forms = []
        for k, i in enumerate(self.profiles[0].graph.graph.inputs):
            shapes = {p.graph.graph.inputs[k].shape for p in self.profiles}
            forms.append((i.name, ("N", *i.shape[1:]) if len(shapes) > 1 else i.shape))
        return forms

    # -- running ----------------------------------------------------------------------------
    def select(self, *args, **kwargs) -> CompiledGraph:
        """The profile whose input shapes equal those of the inputs given (as `run` takes them)."""
        given = self.profiles[0].graph._given(args, kwargs)  # names checked once, as run does
        shapes = {k: _shape_of(v) for k, v in given.items() if v is not None}
        for p in self.profiles:
            want = {i.name: i.shape for i in p.graph.graph.inputs}
            if all(s is None or s == want[k] for k, s in shapes.items()):
                return p.graph
        shown = ", ".join(f"{k} {_dims(s)}" for k, s in shapes.items() if s is not None)
        expect = ", ".join(f"{name} {_dims(shape)}" for name, shape in self._input_forms())
        raise NoMatchingProfile(f"no batch profile matches the inputs ({shown}); built for batch sizes "
                                f"{self._listed()} ({expect})")

    def run(self, *args, **kwargs) -> list:
        """CompiledGraph.run on the profile the inputs' shapes select (out=, as_numpy=, stream=
        as there)."""
        opts = {k: kwargs.pop(k) for k in ("out", "as_numpy", "stream") if k in kwargs}
        return self.select(*args, **kwargs).run(*args, **opts, **kwargs)

    __call__ = run


def profiled(graphs: Mapping[int, CompiledGraph]) -> ProfiledGraph:
    """A ProfiledGraph from {batch: compiled graph}."""
    return ProfiledGraph(tuple(Profile(int(b), g) for b, g in graphs.items()))
