"""Weight layout: a matmul by a constant 2-D weight stored [N, K], as a Linear keeps it.

ONNX exporters write a Linear over a 3-D activation (a transformer's projections and MLP) as
MatMul(x[..., K], W.T[K, N]) with the transposed weight as an initializer. Hopper's wgmma reads
B from shared memory K-major only for 16-bit types in tefuse's template, so such a matmul would
fall back to mma.sync. Like TensorRT, which picks its weights' layout at build time, this pass
transposes the constant once here and marks the matmul `trans_b`: the GEMM then reads B [N, K]
(K fastest) and all of x's rows form its M (batch dims included).
"""
from __future__ import annotations

import numpy as np

from .ir import CONST, Graph, Node, fresh_name, infer


TENSOR_CORE_DTYPES = ("float16", "bfloat16")  # what the wgmma path multiplies


def _candidate(n: Node) -> bool:
    if n.op != "matmul" or n.attrs.get("trans_b") or len(n.inputs) != 2:
        return False
    a, b = n.inputs
    return b.op == CONST and len(b.shape) == 2 and len(a.shape) >= 2 and b.dtype in TENSOR_CORE_DTYPES


def transpose_matmul_weights(graph: Graph) -> Graph:
    """The graph with every fp16/bf16 matmul by a constant 2-D weight reading it as [N, K]."""
    if not any(_candidate(n) for n in graph.nodes):
        return graph
    names = {n.name for n in graph.nodes}
    new: dict[int, Node] = {}
    transposed: dict[int, Node] = {}  # one [N, K] copy per weight, however many matmuls read it
    for n in graph.nodes:
        if not n.is_op:
            new[id(n)] = n
            continue
        inputs = [new[id(i)] for i in n.inputs]
        attrs = dict(n.attrs)
        if _candidate(n):
            w = inputs[1]
            if id(w) not in transposed:
                v = np.ascontiguousarray(np.asarray(w.value).T)
                transposed[id(w)] = Node(fresh_name(names, f"{w.name}_nk"), CONST, [], {}, tuple(v.shape),
                                         w.dtype, v)
            inputs[1] = transposed[id(w)]
            attrs["trans_b"] = True
        attrs, shape, dtype = infer(n.op, attrs, inputs, n.name)
        new[id(n)] = Node(n.name, n.op, inputs, attrs, tuple(shape), dtype)
    return Graph(list(graph.inputs), [new[id(o)] for o in graph.outputs])
