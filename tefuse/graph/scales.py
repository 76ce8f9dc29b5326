"""Scalar factors of a matrix product's operands folded into the product:
matmul(a * s, b * t) = matmul(a, b, alpha=s * t).

Why: torch.onnx writes scaled dot-product attention with Q and K^T each multiplied by
sqrt(1 / sqrt(d)) before the product (ViT, BERT). Left there, the multiplications are computed
inside the GEMM's operand loads, so the tile copies cannot stream by cp.async
(schedules/cuda/prologue.py). As the product's `alpha` they are applied once per result to the
float32 accumulator, before any cast to fp16 (so the unscaled scores never have to fit in fp16,
and s * t is never an fp16 constant), which is also closer to the exact product than scaling two
rounded operands. onnxruntime's attention fusion folds the scale into the product the same way.
Only products of two computed operands (attention's; not a weight, constant or graph input):
in x * c @ W the multiplication is already the epilogue of x's kernel (a GELU's final * 0.5
before an MLP's second Linear), and moving it would only change that kernel and this one, and
their tuning records.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .ir import CONST, Graph, Node, RewriteContext, op_node, rewrite

PRODUCTS = ("matmul", "dense")


def _scalar(n: Node) -> Optional[float]:
    if n.op == CONST and np.asarray(n.value).size == 1:
        return float(np.asarray(n.value, np.float64).reshape(()))
    return None


def unscaled(x: Node) -> tuple[Node, float]:
    """(operand, factor) where x is operand * c or operand / c for a one-element constant c that
    does not change operand's shape or dtype; else (x, 1)."""
    if x.op in ("mul", "div") and len(x.inputs) == 2:
        a, b = x.inputs
        pairs = ((a, b), (b, a)) if x.op == "mul" else ((a, b),)
        for v, c in pairs:
            s = _scalar(c)
            if s is not None and v.shape == x.shape and v.dtype == x.dtype and (x.op == "mul" or s != 0):
                return v, (s if x.op == "mul" else 1.0 / s)
    return x, 1.0


def hoist_product_scales(graph: Graph) -> Graph:
    """The graph with scalar factors of every matmul/dense operand folded into its alpha (the
    scaled operand stays for any other consumer)."""
    hoisted = []

    def rule(n: Node, inputs: list[Node], ctx: RewriteContext) -> Node | None:
        if n.op not in PRODUCTS or not n.dtype.startswith(("float", "bfloat")) or not all(i.is_op for i in n.inputs):
            return None
        parts = [unscaled(i) for i in inputs]
        factor = float(np.prod([f for _, f in parts]))
        if factor == 1.0 and all(v is i for (v, _), i in zip(parts, inputs)):
            return None
        hoisted.append(n.name)
        return op_node(n.name, n.op, [v for v, _ in parts],
                       {**n.attrs, "alpha": float(n.attrs.get("alpha", 1.0)) * factor})

    out = rewrite(graph, rule)
    return out if hoisted else graph

