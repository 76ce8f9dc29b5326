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
from onnx.backend.base import Backend, BackendRep, Device, DeviceType

from ...driver import build
from ...runtime.executor import CompiledGraph
from .importer import import_onnx


class TefuseBackendRep(BackendRep):
    """A compiled model: `run(inputs)` returns its outputs as a tuple of numpy arrays."""

    def __init__(self, compiled: CompiledGraph):
        self.compiled = compiled
        self.input_names = [i.name for i in compiled.graph.inputs]

    def run(self, inputs: Any, **kwargs: Any) -> tuple:
        if isinstance(inputs, Mapping):
            feeds = dict(inputs)
        else:
            if isinstance(inputs, np.ndarray):
                inputs = [inputs]
            feeds = dict(zip(self.input_names, inputs))
        return tuple(self.compiled.run(**feeds))


class TefuseBackend(Backend):
    """onnx.backend.base.Backend over tefuse: CPU runs on llvm, CUDA on cuda (where there is one)."""

    cache = None  # a KernelCache shared by every prepare (None: each build compiles everything)
    jobs: Optional[int] = 1  # kernels compiled at once per build; conformance models are tiny

    @classmethod
    def target_for(cls, device: str) -> str:
        return "cuda" if Device(device).type == DeviceType.CUDA else "llvm"

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> TefuseBackendRep:
        graph = import_onnx(model)
        cg = build(graph, cls.target_for(device), cache=kwargs.get("cache", cls.cache),
                   jobs=kwargs.get("jobs", cls.jobs))
        return TefuseBackendRep(cg)

    @classmethod
    def run_model(cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any) -> tuple:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node: onnx.NodeProto, inputs: Sequence[np.ndarray], device: str = "CPU",
                 outputs_info=None, **kwargs: Any) -> tuple:
        """One node on the given inputs: a one-node model around it (default-domain opset from
        kwargs['opset_version'], else the newest), then `run_model`."""
        from onnx import helper

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
