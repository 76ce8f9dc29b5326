"""Graph IR and graph-level rewrites."""
from .ir import CONST, INPUT, Graph, GraphBuilder, Node, topo_order

__all__ = ["CONST", "INPUT", "Graph", "GraphBuilder", "Node", "topo_order"]
