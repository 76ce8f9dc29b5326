"""tefuse: chains of deep-learning operators fused into single GPU kernels, on Apache TVM."""
from __future__ import annotations


from . import ops  # noqa: F401  (registers operators)
from .version import __version__
from .errors import (BuildError, GraphError, OpError, PlanStateError, TefuseError,
                     UnsupportedFusion)
from .fusion import fuse_graph
from .graph import Graph, GraphBuilder
from .runtime import CompiledGraph
from .target import make_target
from .driver import build

__all__ = ["BuildError", "CompiledGraph", "Graph", "GraphBuilder", "GraphError", "OpError",
           "PlanStateError", "TefuseError", "UnsupportedFusion", "build", "fuse_graph",
           "make_target", "__version__"]
