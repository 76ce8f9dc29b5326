"""tefuse as an `onnx.backend` backend, so that onnx's own conformance runner
(`onnx.backend.test.BackendTest`) can drive it.

`prepare` imports the model with `import_onnx` and builds it (llvm by default, every kernel on the
CPU); the returned rep's `run` takes the model's inputs in order (or by name) and returns its
outputs as numpy arrays. A model tefuse cannot import raises `ModelImportError` naming its nodes.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import numpy as np
import onnx
from onnx import helper
from onnx.backend.base import Backend, BackendRep, Device, DeviceType

from ...driver import build
from ...errors import ModelImportError
from ...runtime.executor import CompiledGraph
from .importer import import_onnx


def _model_inputs(model: onnx.ModelProto) -> list[str]:
    inits = {i.name for i in model.graph.initializer}
    return [vi.name for vi in model.graph.input if vi.name not in inits]


class TefuseBackendRep(BackendRep):
    """A compiled model: `run(inputs)` returns its outputs as a tuple of numpy arrays.

    A model some of whose inputs must be constants for tefuse (a Reshape's shape, a reduction's
    axes) is specialized on their values: it is imported and built at `run`, once per distinct
    value of those inputs (`specialized_on` names them); the other inputs stay run-time inputs.
    """

    def __init__(self, model: onnx.ModelProto, compiled: Optional[CompiledGraph], build_fn,
                 specialized_on: Sequence[str] = ()):
        self.model = model
        self.input_names = _model_inputs(model)
        self.specialized_on = list(specialized_on)
        self._build = build_fn
        self._compiled: dict[Any, CompiledGraph] = {}
        if compiled is not None:
            self._compiled[()] = compiled

    @property
    def compiled(self) -> Optional[CompiledGraph]:
        """The compiled graph of the latest specialization (the only one when there is none)."""
        return next(reversed(self._compiled.values()), None)

    def _graph_for(self, feeds: dict) -> CompiledGraph:
        if not self.specialized_on:
            return self._compiled[()]
        missing = [n for n in self.specialized_on if n not in feeds]
        if missing:
            from ...errors import TefuseError

            raise TefuseError(f"missing input(s) {missing}")
        while True:
            consts = {n: np.asarray(feeds[n]) for n in self.specialized_on}
            key = tuple((n, str(v.dtype), v.shape, v.tobytes()) for n, v in consts.items())
            cg = self._compiled.get(key)
            if cg is not None:
                return cg
            try:
                cg = self._compiled[key] = self._build(consts)
                return cg
            except ModelImportError as e:  # a node reads a second input as a constant only
                more = [n for n in e.constant_inputs if n not in consts and n in feeds]
                if not more:  # once the first one is known (Slice: starts, then ends)
                    raise
                self.specialized_on += more

    def run(self, inputs: Any, **kwargs: Any) -> tuple:
        if isinstance(inputs, Mapping):
            feeds = dict(inputs)
        else:
            if isinstance(inputs, np.ndarray):
                inputs = [inputs]
            feeds = dict(zip(self.input_names, inputs))
        cg = self._graph_for(feeds)
        names = {i.name for i in cg.graph.inputs}  # less the specialized and the zero-length ones
        return tuple(cg.run(**{k: v for k, v in feeds.items() if k in names}, as_numpy=True))


class TefuseBackend(Backend):
    """onnx.backend.base.Backend over tefuse: CPU runs on llvm, CUDA on cuda (where there is one)."""

    cache = None  # a KernelCache shared by every prepare (None: each build compiles everything)
    jobs: Optional[int] = 1  # kernels compiled at once per build; conformance models are tiny

    @classmethod
    def target_for(cls, device: str) -> str:
        return "cuda" if Device(device).type == DeviceType.CUDA else "llvm"

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> TefuseBackendRep:
        target = cls.target_for(device)
        cache, jobs = kwargs.get("cache", cls.cache), kwargs.get("jobs", cls.jobs)

        def build_with(consts: Optional[dict] = None) -> CompiledGraph:
            return build(import_onnx(model, constant_inputs=consts), target, cache=cache, jobs=jobs)

        try:
            return TefuseBackendRep(model, build_with(), build_with)
        except ModelImportError as e:
            if not e.constant_inputs:
                raise
            return TefuseBackendRep(model, None, build_with, e.constant_inputs)

    @classmethod
    def run_model(cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any) -> tuple:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node: onnx.NodeProto, inputs: Sequence[np.ndarray], device: str = "CPU",
                 outputs_info=None, **kwargs: Any) -> tuple:
        """One node on the given inputs: a one-node model around it (default-domain opset from
        kwargs['opset_version'], else the newest), then `run_model`."""
        present = [i for i in node.input if i]
        vis = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(np.asarray(v).dtype),
                                             np.asarray(v).shape) for n, v in zip(present, inputs)]
        outs = [helper.make_empty_tensor_value_info(o) for o in node.output if o]
        g = helper.make_graph([node], "node", vis, outs)
        opset = kwargs.pop("opset_version", onnx.defs.onnx_opset_version())
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        m = onnx.shape_inference.infer_shapes(m)
        return cls.run_model(m, list(inputs), device, **kwargs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        d = Device(device)
        if d.type == DeviceType.CPU:
            return True
        from ...target import has_gpu

        return d.type == DeviceType.CUDA and has_gpu("cuda")


prepare = TefuseBackend.prepare
run_model = TefuseBackend.run_model
run_node = TefuseBackend.run_node
supports_device = TefuseBackend.supports_device
