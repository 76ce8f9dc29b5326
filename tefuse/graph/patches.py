"""A patch-embedding conv (kernel == stride, no padding: ViT's 16x16/16, ConvNeXt's 4x4/4 stem)
over an image's few channels made a matrix product: its input cut into patches (a reshape and a
transpose, read in the product's loads or one copy) times the weight as [C*kh*kw, K].

Why: the tensor-core conv pads an image's 3 channels (graph/weights.py), so ViT-B/16's patch
conv, its channels padded to 8, reduced over 16*16*8 = 2048 instead of 768 and needed its own
padding kernel: 156 us at batch 32 on the H100; as a product, 32 us (the patch copy with the
input's cast 9, the 6272 x 768 x 768 product 21). Patches do not overlap, so each input element
is read once: the
product's A is the input itself, rearranged, with K = C*kh*kw whole (c, ky, kx row-major: a
patch row of kw pixels is contiguous in NCHW). TensorRT and onnxruntime treat such convs as
GEMMs too. Only for tensor-core dtypes (the pass runs after the precision one), so a float32
build keeps its conv.
"""
from __future__ import annotations

import numpy as np

from ..ops.conv2d import WEIGHT_LAYOUT
from .ir import CONST, Graph, Node, RewriteContext, fresh_name, op_node, rewrite
from .weights import TENSOR_CORE_DTYPES, vector_lanes

# each weight layout -> its axes as (K out, then the reduction in the order the patches are cut)
_WEIGHT_TO_K_RED = {"OIHW": (0, 1, 2, 3), "HWIO": (3, 0, 1, 2), "OHWI": (0, 1, 2, 3)}


def _is_patch_conv(n: Node) -> bool:
    if n.op != "conv2d" or n.attrs.get("split_k", 1) != 1 or n.attrs.get("math"):
        return False
    x, w = n.inputs
    g = n.geometry
    return (w.op == CONST and x.dtype in TENSOR_CORE_DTYPES and g.groups == 1
            and g.stride == (g.kh, g.kw) and g.kh * g.kw > 1 and not any(g.padding)
            and g.dilation == (1, 1) and g.h % g.kh == 0 and g.w % g.kw == 0
            and g.c % vector_lanes(x.dtype) != 0)  # channels the conv would pad


def _tokens_chain(conv: Node, consumers, outputs: set) -> list[Node] | None:
    """[bias_add,] reshape, transpose after an NCHW patch conv that make its output [B, OH*OW, K]
    (torchvision's ViT: conv_proj, reshape(n, hidden, -1), permute(0, 2, 1)), none of them but the
    last read by anything else or a graph output; None otherwise."""
    g = conv.geometry
    chain, n = [], conv
    while True:
        users = consumers[n]
        if len(users) != 1 or id(n) in outputs:
            return None
        n = users[0]
        if n.op == "bias_add" and not chain and n.inputs[0] is conv and n.attrs.get("axis", 1) % 4 == 1:
            chain.append(n)
            continue
        break
    if n.op != "reshape" or tuple(n.shape) != (g.n, g.k, g.oh * g.ow) or id(n) in outputs:
        return None
    users = consumers[n]
    t = users[0] if len(users) == 1 else None
    if t is None or t.op != "transpose" or tuple(a % 3 for a in t.attrs.get("axes") or ()) != (0, 2, 1):
        return None
    return [*chain, n, t]


def patch_convs_as_products(graph: Graph) -> Graph:
    """The graph with each patch-embedding conv over unaligned channels (see the module
    docstring) a matmul between reshapes; other convs unchanged."""
    convs = [n for n in graph.nodes if _is_patch_conv(n)]
    if not convs:
        return graph
    consumers, outputs = graph.consumers(), {id(o) for o in graph.outputs}
    # an NCHW conv whose output is made tokens right after: the product's rows are the tokens
    tokens = {id(c): _tokens_chain(c, consumers, outputs) for c in convs if c.geometry.layout == "NCHW"}
    after = {id(n): c for c in convs for n in (tokens.get(id(c)) or ())}

    def rule(n: Node, inputs: list[Node], ctx: RewriteContext) -> Node | None:
        if id(n) in after:  # the tokens chain: bias over the last axis, the rows made [B, OH*OW, K]
            if n.op == "bias_add":
                return op_node(n.name, n.op, inputs, {**n.attrs, "axis": -1})
            if n.op == "reshape":  # read only by the transpose, which takes its place
                return inputs[0]
            g = after[id(n)].geometry  # the transpose, under its own name (it may be an output)
            return op_node(n.name, "reshape", inputs, {"shape": (g.n, g.oh * g.ow, g.k)})
        if not _is_patch_conv(n):
            return None
        x, w = inputs
        g = n.geometry
        b, c, kh, kw, oh, ow, k = g.n, g.c, g.kh, g.kw, g.oh, g.ow, g.k

        def node(suffix, op, ins, **attrs):
            return op_node(fresh_name(ctx.names, f"{n.name}_{suffix}"), op, ins, attrs)

        if g.layout == "NCHW":  # [B, C, OH, kh, OW, kw] -> [B, OH, OW, C, kh, kw]
            cut, axes = (b, c, oh, kh, ow, kw), (0, 2, 4, 1, 3, 5)
        else:  # NHWC: [B, OH, kh, OW, kw, C] -> [B, OH, OW, kh, kw, C]
            cut, axes = (b, oh, kh, ow, kw, c), (0, 1, 3, 2, 4, 5)
        patches = node("patches", "reshape", [node("cut", "transpose", [node("grid", "reshape", [x], shape=cut)],
                                                   axes=axes)], shape=(b * oh * ow, c * kh * kw))
        layout = g.weight_layout or WEIGHT_LAYOUT[g.layout]
        v = np.asarray(w.value).transpose(_WEIGHT_TO_K_RED[layout]).reshape(k, -1)  # [K, red], red as cut
        wmat = Node(fresh_name(ctx.names, f"{w.name}_kn"), CONST, [], {}, (v.shape[1], k), w.dtype,
                    np.ascontiguousarray(v.T))
        if tokens.get(id(n)):
            return op_node(n.name, "matmul", [patches, wmat], {})
        y = node("product", "matmul", [patches, wmat])
        if g.layout == "NHWC":
            return op_node(n.name, "reshape", [y], {"shape": (b, oh, ow, k)})
        rows = node("rows", "reshape", [y], shape=(b, oh, ow, k))
        return op_node(n.name, "transpose", [rows], {"axes": (0, 3, 1, 2)})

    return rewrite(graph, rule)
