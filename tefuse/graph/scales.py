"""Scalar factors of a matrix product's operands moved to its output:
matmul(a * s, b * t) = matmul(a, b) * (s * t).

Why: torch.onnx writes scaled dot-product attention with Q and K^T each multiplied by
sqrt(1 / sqrt(d)) before the product (ViT, BERT). Left there, the multiplications are computed
inside the GEMM's operand loads, so the tile copies cannot stream by cp.async
(schedules/cuda/prologue.py). On the output they join the fused epilogue, applied once per result
to the float32 accumulator, which in fp16 is also closer to the exact product than scaling two
rounded operands. onnxruntime's attention fusion folds the scale into the product the same way.
Only products of two computed operands (attention's): in x * c @ W the multiplication is
already the epilogue of x's kernel (a GELU's final * 0.5 before an MLP's second Linear), and
moving it would only change that kernel and this one, and their tuning records.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .ir import CONST, Graph, Node, fresh_name, infer

PRODUCTS = ("matmul", "dense")


def _scalar(n: Node) -> Optional[float]:
    if n.op == CONST and np.asarray(n.value).size == 1:
        return float(np.asarray(n.value, np.float64).reshape(()))
    return None


def _unscaled(x: Node) -> tuple[Node, float]:
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
    """The graph with scalar factors of every matmul/dense operand applied to its output instead
    (the product keeps its name; the scaled operand stays for any other consumer)."""
    names = {n.name for n in graph.nodes}
    new: dict[int, Node] = {}
    changed = False
    for n in graph.nodes:
        if not n.is_op:
            new[id(n)] = n
            continue
        inputs = [new[id(i)] for i in n.inputs]
        if n.op in PRODUCTS and n.dtype.startswith(("float", "bfloat")) and all(i.op != CONST for i in n.inputs):
            parts = [_unscaled(i) for i in inputs]
            factor = float(np.prod([f for _, f in parts]))
            if any(f != 1.0 for _, f in parts):
                changed = True
                ops = [v for v, _ in parts]
                attrs, shape, dtype = infer(n.op, n.attrs, ops, n.name)
                prod = Node(fresh_name(names, f"{n.name}_unscaled"), n.op, ops, attrs, tuple(shape), dtype)
                c = Node(fresh_name(names, f"{n.name}_scale"), CONST, [], {}, (),
                         dtype, np.asarray(factor, _np(dtype)))
                attrs, shape, dtype = infer("mul", {}, [prod, c], n.name)
                new[id(n)] = Node(n.name, "mul", [prod, c], attrs, tuple(shape), dtype)
                continue
        attrs, shape, dtype = infer(n.op, n.attrs, inputs, n.name)
        new[id(n)] = Node(n.name, n.op, inputs, attrs, tuple(shape), dtype)
    if not changed:
        return graph
    return Graph(list(graph.inputs), [new[id(o)] for o in graph.outputs])


def _np(dtype: str):
    if dtype == "bfloat16":
        import ml_dtypes

        return ml_dtypes.bfloat16
    return np.dtype(dtype)
