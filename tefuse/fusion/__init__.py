"""The operator-fusion pass."""
from .fuse_ops import FusedGroup, PrologueCandidate, ProloguePolicy, fuse_graph

__all__ = ["FusedGroup", "PrologueCandidate", "ProloguePolicy", "fuse_graph"]
