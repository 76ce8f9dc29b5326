"""tefuse: chains of deep-learning operators fused into single GPU kernels, on Apache TVM.

The facade: everything a user needs is importable from here,

    from tefuse import GraphBuilder, FusionPlan, TensorDesc, build, import_onnx

Names are imported when first used (PEP 562), so `import tefuse` (and `tefuse --help`) does
not load TVM; the errors and the version are light and imported at once.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .version import __version__
from .errors import (BuildError, GraphError, ModelImportError, OpError, PlanStateError, TefuseError,
                     UnsupportedFusion)

# public name -> module that defines it (relative to this package)
_LAZY = {
    "Graph": ".graph", "GraphBuilder": ".graph", "Node": ".graph",
    "fuse_graph": ".fusion",
    "CompiledGraph": ".runtime",
    "make_target": ".target",
    "build": ".driver",
    "calibrate": ".calibrate", "Calibration": ".graph.calibration", "MultiTensorAdam": ".optim",
    "FusionPlan": ".plan", "TensorDesc": ".plan", "OperatorArgs": ".plan", "parse_chain": ".plan",
    "import_onnx": ".frontend.onnx", "import_onnx_profiles": ".frontend.onnx",
    "ProfiledGraph": ".runtime.profiles",
    "load": ".runtime.artifact", "save": ".runtime.artifact",
    "list_ops": ".ops",
}

__all__ = ["BuildError", "Calibration", "CompiledGraph", "FusionPlan", "Graph", "GraphBuilder", "GraphError",
           "ModelImportError", "MultiTensorAdam", "Node", "OpError", "OperatorArgs", "PlanStateError", "ProfiledGraph", "TefuseError",
           "TensorDesc", "UnsupportedFusion", "build", "calibrate", "fuse_graph", "import_onnx", "import_onnx_profiles",
           "list_ops", "load", "make_target", "parse_chain", "save", "__version__"]

if TYPE_CHECKING:  # for type checkers and IDEs; at run time these come from __getattr__
    from .calibrate import calibrate
    from .driver import build
    from .graph.calibration import Calibration
    from .optim import MultiTensorAdam
    from .frontend.onnx import import_onnx, import_onnx_profiles
    from .fusion import fuse_graph
    from .graph import Graph, GraphBuilder, Node
    from .ops import list_ops
    from .plan import FusionPlan, OperatorArgs, TensorDesc, parse_chain
    from .runtime import CompiledGraph
    from .runtime.artifact import load, save
    from .runtime.profiles import ProfiledGraph
    from .target import make_target


def __getattr__(name: str) -> Any:
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'tefuse' has no attribute {name!r}")
    value = getattr(importlib.import_module(mod, __name__), name)
    globals()[name] = value  # once: later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
