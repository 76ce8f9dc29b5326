"""QDQ models (QuantizeLinear / DequantizeLinear around float ops, as onnxruntime's quantize_static
and TensorRT's explicit quantization write them) as int8 or float8 products.

`quantize_products`: a conv2d / matmul / dense whose data is dequantize_linear(x_q) (int8, or
uint8 read as int8 with its zero point moved by 128; one scale and zero point) and whose weight
is dequantize_linear(w_q) of constants (int8, symmetric, one scale or one per output channel)
becomes the quantized anchor

    acc = conv2d(pad(x_q, zx), w_q, out_dtype=int32)         int8 operands, int32 accumulation
    y   = float32(acc - zx * sum(w_q)) * (sx * sw[k])         the dequantize scale

with the zero point's share taken out per output channel (padding with zx first makes every
window a full one, so that share is one constant per channel). Everything after it (bias, ReLU,
residual add, the next QuantizeLinear) is elementwise and is fused after the anchor by the
fusion pass; the weights are read as the int8 constants the model holds.

float8 QDQ (e4m3fn or e5m2 on both operands, zero points 0) becomes the same anchor on the codes:

    y   = float32(conv2d(pad(x_q, +0), w_q, codes=float8_e4m3fn)) * (sx * sw[k])   float32 accumulation

(the cast is one only in a float32 build: in fp16, like the int8 anchor's, it is where the
result narrows)

each code decoded exactly in the product (ops/codes.py), and read as e4m3/e5m2 by Hopper's tensor
cores (schedules/cuda/intrin/wgmma.py).

`fold_constant_dequantize`: any dequantize_linear of constants left over (weights of an op this
pass does not take, or a build without it) becomes its float constant, computed once here.
"""
from __future__ import annotations

import logging
from typing import Optional

import numpy as np

from ..ops.codes import PRODUCT_CODES
from ..ops.conv2d import normalize_padding
from .ir import CONST, Graph, Node, RewriteContext, fresh_name, op_node, rewrite
from .lowbit import from_storage

log = logging.getLogger(__name__)

_PRODUCTS = {"conv2d", "matmul", "dense"}


def _const(n: Node) -> Optional[np.ndarray]:
    return n.value if n.op == CONST else None


def _codes(dq: Node) -> Optional[str]:
    """What a dequantize_linear's input holds: "" for int8/uint8 values, the float8 format of
    uint8 codes the tensor cores multiply (ops/codes.py), None for anything else."""
    src = str(dq.attrs.get("src") or "")
    if not src:
        return "" if dq.inputs[0].dtype in ("int8", "uint8") else None
    return src if src in PRODUCT_CODES else None


def _zero(z: np.ndarray, codes: str) -> bool:
    """Whether a zero point is zero: a float8 one as its code (+0 or -0)."""
    return not np.any(z & 0x7F if codes else z)


def _activation(dq: Node) -> Optional[tuple[Node, float, int, str]]:
    """(x_q, scale, zero point, codes) of a per-tensor int8/uint8 or float8 dequantize_linear,
    else None (`_codes`; a float8 zero point is 0)."""
    if dq.op != "dequantize_linear" or dq.dtype != "float32":
        return None
    codes = _codes(dq)
    xq, s, z = dq.inputs
    sv, zv = _const(s), _const(z)
    if codes is None or sv is None or zv is None or sv.size != 1 or zv.size != 1:
        return None
    if codes:
        return (xq, float(sv.reshape(())), 0, codes) if _zero(zv, codes) else None
    return xq, float(sv.reshape(())), int(zv.reshape(())), codes


def _weight(dq: Node, k_axis: int) -> Optional[tuple[np.ndarray, np.ndarray, str]]:
    """(w_q, scale per output channel, codes) of a symmetric dequantize_linear of int8 or float8
    constants."""
    if dq.op != "dequantize_linear" or dq.attrs.get("block_size"):
        return None
    codes = _codes(dq)
    wq, s, z = (_const(i) for i in dq.inputs)
    if codes is None or wq is None or s is None or z is None or not _zero(z, codes):
        return None
    if wq.dtype != (np.uint8 if codes else np.int8):
        return None
    k = wq.shape[k_axis]
    if s.size == 1:
        return wq, np.full(k, float(s.reshape(())), np.float64), codes
    if s.ndim != 1 or s.size != k or (dq.attrs["axis"] % wq.ndim) != k_axis:
        return None
    return wq, s.astype(np.float64), codes


def _quantized(n: Node, ins: list[Node], ctx: RewriteContext, fast_accum: bool = False) -> Optional[Node]:
    if n.op not in _PRODUCTS or n.dtype != "float32" or any(
            n.attrs.get(a) for a in ("math", "split_k", "trans_b", "weight_layout")) or n.attrs.get("alpha", 1.0) != 1.0:
        return None
    act = _activation(ins[0])
    if n.op == "conv2d":
        if n.attrs["layout"] != "NCHW":
            return None
        k_axis, sum_axes, ch_shape = 0, (1, 2, 3), (-1, 1, 1)
    elif n.op == "dense":
        k_axis, sum_axes, ch_shape = 0, (1,), (-1,)
    else:
        if len(ins[1].shape) != 2:
            return None
        k_axis, sum_axes, ch_shape = 1, (0,), (-1,)
    w = _weight(ins[1], k_axis)
    if act is None or w is None or act[3] != w[2]:
        return None
    xq, sx, zx, codes = act
    wq, sw, _ = w
    names = ctx.names

    def const(base: str, value: np.ndarray) -> Node:
        return Node(fresh_name(names, f"{n.name}_{base}"), CONST, [], {}, value.shape, str(value.dtype), value)

    attrs = {k: v for k, v in n.attrs.items() if k != "padding"}
    data = xq
    if xq.dtype == "uint8" and not codes:  # as int8 with its zero point moved down by 128: x - zx stays the same
        wide = op_node(fresh_name(names, f"{n.name}_u8"), "cast", [xq], {"dtype": "int16"})
        wide = op_node(fresh_name(names, f"{n.name}_u8_shift"), "sub", [wide, const("u8_shift", np.array(128, np.int16))], {})
        data = op_node(fresh_name(names, f"{n.name}_s8"), "cast", [wide], {"dtype": "int8"})
        zx -= 128
    if n.op == "conv2d":
        t, l, b, r = normalize_padding(n.attrs["padding"])
        if any((t, l, b, r)):  # padded with the zero point: the zero of the quantized values
            data = op_node(fresh_name(names, f"{n.name}_pad"), "pad", [data],
                           {"pads": (0, 0, t, l, 0, 0, b, r), "value": float(zx)})
        attrs["padding"] = 0
    wnode = const("wq", np.ascontiguousarray(wq))
    if codes:  # float8 codes: products summed in float32, no zero point (code 0 pads: +0.0)
        fast = {"fast_accum": True} if fast_accum else {}
        acc = op_node(fresh_name(names, f"{n.name}_fp8"), n.op, [data, wnode], {**attrs, "codes": codes, **fast})
    else:
        acc = op_node(fresh_name(names, f"{n.name}_int8"), n.op, [data, wnode], {**attrs, "out_dtype": "int32"})
    if zx:
        corr = (zx * wq.astype(np.int64).sum(axis=sum_axes)).astype(np.int32)
        acc = op_node(fresh_name(names, f"{n.name}_zp"), "sub", [acc, const("zp_share", corr.reshape(ch_shape))], {})
    f = op_node(fresh_name(names, f"{n.name}_acc"), "cast", [acc], {"dtype": "float32"})
    scale = (sx * sw).astype(np.float32).reshape(ch_shape)
    return op_node(n.name, "mul", [f, const("scale", scale)], {})


def quantize_products(graph: Graph, fast_accum: bool = False) -> Graph:
    """The graph with every QDQ conv2d / matmul / dense as an int8 or float8 anchor (see the
    module); fast_accum: the float8 ones may sum in the tensor cores' accumulator
    (ops/codes.fast_accumulation)."""
    if not has_dequantize(graph):  # a float model: no walk, no copy
        return graph
    out = rewrite(graph, lambda n, ins, ctx: _quantized(n, ins, ctx, fast_accum))
    done = sum(1 for n in out.nodes if n.is_op and n.attrs.get("out_dtype") == "int32")
    fp8 = sum(1 for n in out.nodes if n.is_op and n.attrs.get("codes"))
    if done or fp8:
        log.info("qdq: %d product(s) computed on int8 operands, %d on float8", done, fp8)
    return out


def _dequantized(n: Node, ins: list[Node], ctx: RewriteContext) -> Optional[Node]:
    if n.op != "dequantize_linear" or n.attrs.get("block_size"):
        return None
    vals = [_const(i) for i in ins]
    if any(v is None for v in vals):
        return None
    x, s, z = vals
    src = str(n.attrs.get("src") or x.dtype)
    axis = n.attrs["axis"] % max(x.ndim, 1)

    def lay(v: np.ndarray) -> np.ndarray:
        if v.size == 1:
            return v.reshape(())
        shape = [1] * x.ndim
        shape[axis] = v.size
        return v.reshape(shape)

    xf = from_storage(x, src).astype(np.float32)
    if not src.startswith("float"):
        xf = xf - lay(from_storage(z, src).astype(np.float32))
    y = (xf * lay(s).astype(np.float32)).astype(n.dtype)
    return Node(n.name, CONST, [], {}, y.shape, str(y.dtype), y)


def fold_constant_dequantize(graph: Graph) -> Graph:
    """Every dequantize_linear of constants as its float constant."""
    return rewrite(graph, _dequantized) if has_dequantize(graph) else graph


def has_dequantize(graph: Graph) -> bool:
    return any(n.op == "dequantize_linear" for n in graph.nodes)
