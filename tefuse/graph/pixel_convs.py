"""A pointwise conv over a one-pixel image made a dense product: squeeze-and-excitation's two
1x1 convs after a global pooling (EfficientNet, MobileNet-V3, RegNet-Y) are matrix-vector
products, [N, C] x [K, C].

Why: as convs they took the direct (CUDA-core) conv template, whose threads each sum a whole
input-channel row in sequence: at batch 1 an SE reduce conv of EfficientNet-V2-S (1536 -> 64)
was 32 us on an H200, latency-bound, and its 60 SE convs 0.83 ms of a 2.4 ms run. The dense
templates spread K over a warp (the GEMV case) and take tensor cores once N is large. Only the
view changes, so numerics are the conv's; onnxruntime treats these convs as GEMMs too.
"""
from __future__ import annotations

import numpy as np

from ..ops.conv2d import WEIGHT_LAYOUT
from .ir import CONST, Graph, Node, RewriteContext, fresh_name, op_node, rewrite

FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")


def _is_pixel_conv(n: Node) -> bool:
    if n.op != "conv2d" or n.attrs.get("split_k", 1) != 1 or n.attrs.get("out_dtype"):
        return False
    x, w = n.inputs
    g = n.geometry
    return (w.op == CONST and x.dtype in FLOAT_DTYPES and g.groups == 1 and (g.kh, g.kw) == (1, 1)
            and (g.h, g.w) == (1, 1) and not any(g.padding) and isinstance(g.n, int))


def pixel_convs_as_dense(graph: Graph) -> Graph:
    """The graph with each 1x1 conv over a 1x1 image (see the module docstring) a dense product
    between reshapes; other convs unchanged."""
    if not any(_is_pixel_conv(n) for n in graph.nodes):
        return graph
    weights: dict[int, Node] = {}  # one [K, C] copy per weight, however many convs read it

    def rule(n: Node, inputs: list[Node], ctx: RewriteContext) -> Node | None:
        if not _is_pixel_conv(n):
            return None
        x, w = inputs
        g = n.geometry
        if id(w) not in weights:
            layout = g.weight_layout or WEIGHT_LAYOUT[g.layout]
            axes = [layout.index(a) for a in "OIHW"]  # [K out, C in, 1, 1] whatever the layout
            v = np.asarray(w.value).transpose(axes).reshape(g.k, g.c)
            weights[id(w)] = Node(fresh_name(ctx.names, f"{w.name}_kc"), CONST, [], {}, (g.k, g.c), w.dtype,
                                  np.ascontiguousarray(v))
        rows = op_node(fresh_name(ctx.names, f"{n.name}_rows"), "reshape", [x], {"shape": (g.n, g.c)})
        attrs = {"math": n.attrs["math"]} if n.attrs.get("math") else {}
        y = op_node(fresh_name(ctx.names, f"{n.name}_product"), "dense", [rows, weights[id(w)]], attrs)
        return op_node(n.name, "reshape", [y], {"shape": tuple(n.shape)})

    return rewrite(graph, rule)
