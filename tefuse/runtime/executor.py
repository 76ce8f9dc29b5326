"""Executes a compiled graph: kernels in order over planned buffers.

Parameters (constants) are uploaded once; intermediate buffers are reused once their last
reader has run; inputs may be numpy arrays or any DLPack tensor (torch, cupy), taken
without a copy when already on the device.
"""
from __future__ import annotations

import logging
from typing import Any, Optional, Sequence

import numpy as np
import tvm

from .kernel import CompiledKernel
from ..errors import TefuseError
from ..graph.ir import CONST, INPUT, Graph, Node
from ..target import device_for

log = logging.getLogger(__name__)


def to_device(x: Any, dev) -> tvm.runtime.Tensor:
    """A tensor on `dev`: DLPack tensors already there (torch, cupy) are used without a copy."""
    if isinstance(x, tvm.runtime.Tensor):
        return x if x.device == dev else x.copyto(dev)
    if hasattr(x, "__dlpack__") and not isinstance(x, np.ndarray):
        try:
            t = tvm.runtime.from_dlpack(x)
        except RuntimeError as e:  # TVM takes only 64-byte aligned data (a sliced tensor isn't)
            if x.__dlpack_device__()[0] != 1:  # not host memory: no copy we can make here
                raise TefuseError(f"cannot use a {type(x).__name__} input in place: "
                                  f"{str(e).strip().splitlines()[-1]}; pass a contiguous copy "
                                  "(e.g. tensor.clone())") from None
            return tvm.runtime.tensor(np.asarray(np.from_dlpack(x), order="C"), dev)  # 0-d stays 0-d
        if t.device == dev:
            return t
        return tvm.runtime.tensor(t.numpy(), dev)
    return tvm.runtime.tensor(np.asarray(x, order="C"), dev)  # keeps 0-d arrays 0-d


class CompiledGraph:
    """A fused, compiled graph bound to a target; call `run` as often as needed."""

    def __init__(self, graph: Graph, target, kernels: list[CompiledKernel], device_index: int = 0):
        self.graph = graph
        self.target = target
        self.kernels = kernels  # in run order; replace the list rather than its items
        self.device = device_for(target, device_index)
        self._params: dict[int, tvm.runtime.Tensor] = {}
        self._launches: Optional[list] = None  # see _launch_list
        self._launch_kernels: Optional[list[CompiledKernel]] = None
        self._plan = self._plan_buffers()

    # -- inspection ----------------------------------------------------------------------
    @property
    def num_kernels(self) -> int:
        return len(self.kernels)

    def source(self, kind: Optional[str] = None) -> str:
        kind = kind or ("cuda" if self.target.kind.name == "cuda" else "tir")
        return "\n".join(f"// ---- {k.group.name} ----\n{k.source(kind)}" for k in self.kernels)

    def summary(self) -> str:
        ops = sum(len(k.group.nodes) for k in self.kernels)
        lines = [f"{len(self.kernels)} kernels for {ops} ops on {self.target.kind.name}"]
        for k in self.kernels:
            lines.append(f"  {k.group.describe()}  [{k.template} #{k.config_index}, {k.config_source}]")
        return "\n".join(lines)

    # -- memory planning ------------------------------------------------------------------
    def _plan_buffers(self) -> dict[int, int]:
        """Node -> buffer slot, reusing slots whose value is dead (same shape and dtype)."""
        last_use: dict[int, int] = {}
        for step, k in enumerate(self.kernels):
            for p in k.params:
                last_use[id(p)] = step
        for o in self.graph.outputs:
            last_use[id(o)] = len(self.kernels)
        self._slots: list[tuple[tuple, str]] = []
        free: dict[tuple, list[int]] = {}
        plan: dict[int, int] = {}
        for step, k in enumerate(self.kernels):
            for o in k.outputs:
                key = (o.shape, o.dtype)
                if free.get(key) and id(o) not in map(id, self.graph.outputs):
                    plan[id(o)] = free[key].pop()
                else:
                    plan[id(o)] = len(self._slots)
                    self._slots.append(key)
            for p in {id(p): p for p in k.params}.values():
                if p.op not in (INPUT, CONST) and last_use.get(id(p)) == step and id(p) in plan:
                    free.setdefault((p.shape, p.dtype), []).append(plan[id(p)])
        return plan

    def _param(self, n: Node) -> tvm.runtime.Tensor:
        t = self._params.get(id(n))
        if t is None:
            t = self._params[id(n)] = tvm.runtime.tensor(np.asarray(n.value, order="C"), self.device)
        return t

    def set_param(self, name: str, value: Any) -> None:
        """Replace a constant's value (same shape/dtype) without rebuilding."""
        n = self.graph.node(name)
        if n.op != CONST:
            raise TefuseError(f"{name!r} is not a constant of the graph")
        arr = np.asarray(value, dtype=n.dtype)
        if arr.shape != n.shape:
            raise TefuseError(f"parameter {name!r}: expected shape {n.shape}, got {arr.shape}")
        if arr.size == 1 and any(id(n) in map(id, k.group.inputs) and n not in k.params for k in self.kernels):
            raise TefuseError(f"parameter {name!r} is a scalar folded into the kernels; rebuild to change it")
        n.value = arr
        self._params.pop(id(n), None)
        self._launches = None  # they hold the old tensor

    # -- execution ------------------------------------------------------------------------
    def bind_inputs(self, args: Sequence[Any], kwargs: dict) -> dict[int, tvm.runtime.Tensor]:
        ins = self.graph.inputs
        if len(args) > len(ins):
            raise TefuseError(f"graph takes {len(ins)} inputs ({[i.name for i in ins]}), got {len(args)}")
        given = dict(zip([i.name for i in ins], args))
        for k, v in kwargs.items():
            if k not in {i.name for i in ins}:
                raise TefuseError(f"unknown input {k!r}; inputs are {[i.name for i in ins]}")
            given[k] = v
        out = {}
        for i in ins:
            if i.name not in given:
                raise TefuseError(f"missing input {i.name!r} ({i.type_str()})")
            t = to_device(given[i.name], self.device)
            if tuple(t.shape) != i.shape or str(t.dtype) != i.dtype:
                raise TefuseError(f"input {i.name!r}: expected {i.type_str()}, got "
                                  f"{t.dtype}[{','.join(map(str, t.shape))}]")
            out[id(i)] = t
        return out

    def _slots_for_run(self) -> list[tvm.runtime.Tensor]:
        # intermediate and output buffers are allocated once and reused by every run
        if getattr(self, "_slot_tensors", None) is None:
            self._slot_tensors = [tvm.runtime.empty(shape, dtype, self.device) for shape, dtype in self._slots]
        return self._slot_tensors

    def _launch_list(self) -> list[tuple[Any, list, list[tuple[int, int]]]]:
        """Per kernel: the kernel, its arguments with constants and buffers bound once, and
        the (position, input id) holes each run fills. Why: the Python work per kernel is what
        a small network's run time is made of (see the README's run vs kernel times)."""
        if self._launches is None or self._launch_kernels is not self.kernels:
            slots = self._slots_for_run()
            launches = []
            for k in self.kernels:
                argv: list = [None if p.op == INPUT else self._param(p) if p.op == CONST
                              else slots[self._plan[id(p)]] for p in k.params]
                argv += [slots[self._plan[id(o)]] for o in k.outputs]
                holes = [(i, id(p)) for i, p in enumerate(k.params) if p.op == INPUT]
                launches.append((k, argv, holes))
            self._launches, self._launch_kernels = launches, self.kernels
        return self._launches

    def run(self, *args, as_numpy: bool = True, **kwargs) -> list:
        """Run on inputs given by position or name; returns the graph outputs in order.

        With as_numpy=False the outputs are device tensors owned by this graph: the next
        run overwrites them (copy them, or read them through DLPack, before running again).
        Not for concurrent use: runs share the graph's buffers.
        """
        env = self.bind_inputs(args, kwargs)
        slots = self._slots_for_run()
        launches = self._launch_list()
        try:
            for k, argv, holes in launches:
                for i, key in holes:
                    argv[i] = env[key]
                k.function(*argv)  # a property, so that a kernel given a new module runs it
        finally:
            for _, argv, holes in launches:  # drop the references to this run's inputs
                for i, _key in holes:
                    argv[i] = None
        res = []
        for o in self.graph.outputs:
            t = env[id(o)] if o.op == INPUT else self._param(o) if o.op == CONST else slots[self._plan[id(o)]]
            res.append(t.numpy() if as_numpy else t)
        return res

    def time_kernels(self, *args, number: int = 10, repeat: int = 5, min_repeat_ms: int = 50,
                     **kwargs) -> list[float]:
        """Median device time of each kernel in seconds (TVM's time_evaluator, after a warm-up run)."""
        self.run(*args, as_numpy=False, **kwargs)
        env = self.bind_inputs(args, kwargs)
        times = []
        for k, bound, holes in self._launch_list():
            argv = list(bound)
            for i, key in holes:
                argv[i] = env[key]
            f = k.module.time_evaluator("main", self.device, number=number, repeat=repeat,
                                        min_repeat_ms=min_repeat_ms)
            times.append(float(np.median(f(*argv).results)))
        return times

    __call__ = run
