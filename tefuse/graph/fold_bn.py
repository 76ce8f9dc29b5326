"""Inference batch-norm with constant statistics, folded at build time.

fold_batch_norm (optional): conv(x, W) [+ b] -> batch_norm(gamma, beta, mean, var) becomes
conv(x, W * s) + (b - mean) * s + beta with s = gamma / sqrt(var + eps), when W, b and the
statistics are constants and the conv result feeds nothing else. Saves the per-element BN
arithmetic; fusion already removes its memory traffic.

fold_batch_norm_params (always): any other such batch-norm becomes scale_shift(x, s, beta -
mean * s), s and the shift computed once in float64 and kept in the type the op computes in
(float32 for 16-bit data): one multiply-add an element and two per-channel loads, not a
subtraction, a square root, a division and four loads (DenseNet's batch-norms after each
concat, which no conv precedes).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..ops.value import acc_dtype
from .ir import CONST, Graph, Node, RewriteContext, fresh_name, op_node, rewrite


def _is_const(n: Node) -> bool:
    return n.op == CONST


def fold_batch_norm(graph: Graph) -> Graph:
    consumers = graph.consumers()
    out_ids = set(map(id, graph.outputs))
    new: dict[int, Node] = {}

    def m(n: Node) -> Node:
        return new.get(id(n), n)

    for n in graph.nodes:
        inputs = [m(i) for i in n.inputs]
        repl = dataclasses.replace(n, inputs=inputs) if n.inputs else n
        if n.op == "batch_norm" and all(_is_const(i) for i in n.inputs[1:]):
            folded = _fold(n, inputs, consumers, out_ids)
            if folded is not None:
                repl = folded
        new[id(n)] = repl
    return Graph([m(i) for i in graph.inputs], [m(o) for o in graph.outputs])


def _fold(bn: Node, inputs: list[Node], consumers, out_ids) -> Node | None:
    src = inputs[0]
    bias = None
    if src.op == "bias_add" and _is_const(src.inputs[1]) and len(consumers[bn.inputs[0]]) == 1:
        bias, conv = src.inputs[1].value.astype(np.float64), src.inputs[0]
        orig_conv = bn.inputs[0].inputs[0]
    else:
        conv, orig_conv = src, bn.inputs[0]
    if conv.op != "conv2d" or not _is_const(conv.inputs[1]):
        return None
    if len(consumers[orig_conv]) != 1 or id(orig_conv) in out_ids:
        return None
    layout = conv.attrs["layout"]
    ch_axis = 1 if layout == "NCHW" else 3
    if bn.attrs["axis"] % 4 != ch_axis:
        return None
    gamma, beta, mean, var = (i.value.astype(np.float64) for i in inputs[1:])
    scale = gamma / np.sqrt(var + bn.attrs["epsilon"])
    w = conv.inputs[1].value.astype(np.float64)
    # the output channel is the weight's first axis in OIHW and OHWI (graph/weights.py), last in HWIO
    k_first = layout == "NCHW" or conv.attrs.get("weight_layout") == "OHWI"
    w = w * (scale.reshape(-1, 1, 1, 1) if k_first else scale.reshape(1, 1, 1, -1))
    b = ((bias if bias is not None else 0.0) - mean) * scale + beta
    dt = conv.dtype
    wnode = dataclasses.replace(conv.inputs[1], name=conv.inputs[1].name + "_bnfolded",
                                value=w.astype(dt))
    bnode = Node(bn.name + "_bias", CONST, [], {}, b.shape, dt, b.astype(dt))
    new_conv = dataclasses.replace(conv, inputs=[conv.inputs[0], wnode])
    return Node(bn.name, "bias_add", [new_conv, bnode], {"axis": ch_axis}, bn.shape, bn.dtype)


def fold_batch_norm_params(graph: Graph) -> Graph:
    """Every batch_norm whose gamma, beta, mean and var are constants as a scale_shift."""
    return rewrite(graph, _scale_shift)


def _scale_shift(n: Node, inputs: list[Node], ctx: RewriteContext) -> Node | None:
    if n.op != "batch_norm" or not all(_is_const(i) for i in inputs[1:]):
        return None
    gamma, beta, mean, var = (i.value.astype(np.float64) for i in inputs[1:])
    scale = gamma / np.sqrt(var + n.attrs["epsilon"])
    dt = acc_dtype(n.dtype)
    consts = [Node(fresh_name(ctx.names, f"{n.name}_{what}"), CONST, [], {}, v.shape, dt, v.astype(dt))
              for what, v in (("scale", scale), ("shift", beta - mean * scale))]
    return op_node(n.name, "scale_shift", [inputs[0], *consts], {"axis": n.attrs["axis"]})
