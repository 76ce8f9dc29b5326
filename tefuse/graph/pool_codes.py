"""Max pools on integer codes: quantize_linear(max_pool2d(x)) becomes max_pool2d(quantize_linear(x)).

Quantizing to int8 or uint8 with one positive scale and zero point is monotone (x / scale
rounded half to even, plus the zero point, saturated), so it commutes with a maximum, and the
window's padding, the type's lowest code in place of -inf, never wins. The codes are the same,
bit for bit, for finite inputs. What moves is where the quantize runs: into the epilogue of the
kernel that makes x, which then stores one byte an element instead of two, and the pool reads
those bytes. ResNet's stem (conv, ReLU, 3x3 max pool) is the case: at batch 256 its fp16 output
is 411 MB written and read again, its codes 205 MB. TensorRT runs such pools in int8 for the same
reason.

float8 codes are left alone: their byte order is not their value's (the sign is the top bit).
"""
from __future__ import annotations

import numpy as np

from .ir import CONST, Graph, Node, RewriteContext, fresh_name, op_node, rewrite

CODE_TYPES = ("int8", "uint8")  # one-byte integer codes, ordered as their values


def _scalar(n: Node):
    return n.value.reshape(-1)[0] if n.op == CONST and n.value is not None and n.value.size == 1 else None


def _swappable(q: Node, readers: dict[int, int]) -> bool:
    """Whether `q` quantizes the output of a max pool nothing else reads, per tensor, to codes
    ordered as their values, where the pool reads an op's output that nothing else reads (the
    quantize then joins that op's kernel; over a graph input, or a value read twice, it would
    run in the pool's kernel once a window tap)."""
    if q.op != "quantize_linear" or str(q.attrs.get("dtype")) not in CODE_TYPES or q.attrs.get("block_size"):
        return False
    pool, scale, zero = q.inputs
    s = _scalar(scale)
    return (pool.op == "max_pool2d" and readers.get(id(pool), 0) == 1 and pool.inputs[0].is_op
            and readers.get(id(pool.inputs[0]), 0) == 1 and s is not None and np.isfinite(s) and s > 0
            and _scalar(zero) is not None)


def quantize_before_max_pool(graph: Graph) -> Graph:
    """The graph with each max pool whose only reader quantizes it to int8 / uint8 (one scale)
    computed on the codes instead (see the module)."""
    readers = {id(n): len(c) for n, c in graph.consumers().items()}
    for o in graph.outputs:  # a graph output is read by the caller
        readers[id(o)] += 1
    if not any(_swappable(n, readers) for n in graph.nodes if n.is_op):
        return graph

    def rule(n: Node, ins: list[Node], ctx: RewriteContext):
        if not _swappable(n, readers):
            return None
        pool, scale, zero = ins
        codes = op_node(fresh_name(ctx.names, f"{n.name}_codes"), "quantize_linear",
                        [pool.inputs[0], scale, zero], dict(n.attrs))
        return op_node(n.name, "max_pool2d", [codes], dict(pool.attrs))

    return rewrite(graph, rule)
