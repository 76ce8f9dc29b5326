"""The operator-fusion pass."""
from .fuse_ops import FusedGroup, fuse_graph

__all__ = ["FusedGroup", "fuse_graph"]
