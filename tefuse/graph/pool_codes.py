"""Max pools on integer codes: quantize_linear(max_pool2d(x)) becomes max_pool2d(quantize_linear(x)).

Quantizing to int8 or uint8 with one positive scale and zero point is monotone (x / scale
rounded half to even, plus the zero point, saturated), so it commutes with a maximum, and the
window's padding, the type's lowest code in place of -inf, never wins. The codes are the same,
bit for bit, for finite inputs. What moves is where the quantize runs: into the epilogue of the
kernel that makes x, which then stores one byte an element instead of two, and the pool reads
those bytes. ResNet's stem (conv, ReLU, 3x3 max pool) is the case: at batch 256 its fp16 output
is 411 MB written and read again, its codes 205 MB. TensorRT runs such pools in int8 for the same
reason.

float8 codes (held as uint8) are ordered as their values only where the sign bit is clear: it is
the top bit, and below it exponent and mantissa count up with the value. So a float8 quantize
swaps with the pool where the pool's input comes out of a ReLU (or a clip at +0 or above): the
stem of an fp8 ResNet too. Such an input can still be -0.0 (a ReLU passes it through, as a clip
at -0.0 would make every negative input), whose code 0x80 would beat every positive one: the
codes are made of |x| (exact over these values; -0.0 becomes +0.0, equal to it). Padding's code
0 is +0.0, which such a window's values match at least.
"""
from __future__ import annotations

import numpy as np

from .ir import CONST, Graph, Node, RewriteContext, fresh_name, op_node, rewrite

CODE_TYPES = ("int8", "uint8")  # one-byte integer codes, ordered as their values
# float8 codes, ordered as their values over values >= 0 (see the module)
FLOAT8_CODES = ("float8_e4m3fn", "float8_e5m2")
NON_NEGATIVE = ("relu", "relu6")  # and clip with min >= 0


def _scalar(n: Node):
    return n.value.reshape(-1)[0] if n.op == CONST and n.value is not None and n.value.size == 1 else None


def _non_negative(n: Node) -> bool:
    """Whether n's values are >= 0 but for -0.0 (a clip's min of -0.0 counts as below zero)."""
    lo = float(n.attrs.get("min", -np.inf)) if n.op == "clip" else None
    return n.op in NON_NEGATIVE or (lo is not None and lo >= 0 and not np.signbit(lo))


def _swappable(q: Node, readers: dict[int, int]) -> bool:
    """Whether `q` quantizes the output of a max pool nothing else reads, per tensor, to codes
    ordered as their values (float8's: over a pool of values >= 0), where the pool reads an op's
    output that nothing else reads (the quantize then joins that op's kernel; over a graph input,
    or a value read twice, it would run in the pool's kernel once a window tap)."""
    dtype = str(q.attrs.get("dtype"))
    if q.op != "quantize_linear" or dtype not in (*CODE_TYPES, *FLOAT8_CODES) or q.attrs.get("block_size"):
        return False
    pool, scale, zero = q.inputs
    s = _scalar(scale)
    return (pool.op == "max_pool2d" and readers.get(id(pool), 0) == 1 and pool.inputs[0].is_op
            and readers.get(id(pool.inputs[0]), 0) == 1 and s is not None and np.isfinite(s) and s > 0
            and _scalar(zero) is not None and (dtype in CODE_TYPES or _non_negative(pool.inputs[0])))


def quantize_before_max_pool(graph: Graph) -> Graph:
    """The graph with each max pool whose only reader quantizes it to int8 / uint8 (one scale), or
    to float8 over values >= 0, computed on the codes instead (see the module)."""
    readers = graph.reader_counts()
    if not any(_swappable(n, readers) for n in graph.nodes if n.is_op):
        return graph

    def rule(n: Node, ins: list[Node], ctx: RewriteContext):
        if not _swappable(n, readers):
            return None
        pool, scale, zero = ins
        x = pool.inputs[0]
        if str(n.attrs.get("dtype")) in FLOAT8_CODES:  # -0.0's code would top the window's (module)
            x = op_node(fresh_name(ctx.names, f"{n.name}_abs"), "abs", [x], {})
        codes = op_node(fresh_name(ctx.names, f"{n.name}_codes"), "quantize_linear",
                        [x, scale, zero], dict(n.attrs))
        return op_node(n.name, "max_pool2d", [codes], dict(pool.attrs))

    return rewrite(graph, rule)
