"""Build precision: a float32 graph rewritten to compute in float16 or bfloat16.

What an engineer expects from `--precision fp16` (TensorRT's, torch.autocast's habits):
- the model keeps its float32 interface: a float32 input is cast on entry and a float32
  output cast back on exit; those casts are elementwise, so fusion folds them into the
  first and last kernels (no kernel of their own);
- float32 constants (weights) are converted once, here, not at every run;
- matrix products and convolutions take fp16/bf16 operands and accumulate in float32 (the
  ops' own `acc_dtype`), so tensor-core templates can serve them;
- reductions run in float32: their inputs are cast up and their results cast back, so sums do
  not lose bits. softmax and layer_norm keep their statistics (max, sum, mean, variance) in
  float32 inside the op and are left in the low precision, as PyTorch's fp16 softmax is: a
  float32 softmax between attention's two matrix products doubled the bytes of the scores
  written, read, written and read again (ViT-B/16: 197x197 per head);
- a graph already in fp16 is taken as it is (nothing float32 to convert);
- nothing overflows into an infinity the float32 model did not have (onnxconverter-common's
  float16 conversion, PyTorch autocast's habits): a float32 constant's finite values beyond the
  low type's range saturate to its largest finite value (65504 for fp16), so 0 * mask stays 0, not
  NaN. Additive attention masks go further: elementwise and injective ops reading such a constant
  (`(1 - mask) * torch.finfo(torch.float32).min`, `Where(mask, 0, finfo.min)`), and those reading
  their results (the scores + mask), compute in float32 as the model did, and their result
  saturates where it enters the low precision (the softmax): a masked score is then the lowest
  finite value, not -inf, so a fully masked row comes out uniform, as the float32 model gives it.
  Integer inputs (token ids, masks) pass through as they are.
- a quantized build's float values that are only quantized again (an int8 conv's epilogue that
  stores codes alone: its scale, bias, dequantized shortcut and ReLU) compute in float32 from the
  int32 sums to the codes; the low precision is for values something stores.
`tf32` keeps float32 everywhere and marks every float32 matrix product (conv2d, dense, matmul)
math='tf32': their operands are rounded to TF32 (what PyTorch does by default for convolutions),
and the tensor-core templates multiply them with mma.sync .tf32 (wgmma .tf32 on Hopper).
`fp32` leaves the graph alone.
"""
from __future__ import annotations

import numpy as np

from ..errors import GraphError
from ..ops import OpPattern, get_op
from .ir import CONST, INPUT, Graph, Node, RewriteContext, fresh_name, infer, op_node, rewrite, topo_order

PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "int8", "fp8")
LOW = {"fp16": "float16", "bf16": "bfloat16"}
# quantized precisions: the calibrated products compute on int8 or float8 e4m3fn
# (graph/calibration.py, qdq.py), everything else in this float precision
QUANTIZED = {"int8": "fp16", "fp8": "fp16"}
# anchors whose arithmetic stays in float32 (statistics); matched by the op registry's anchor kind.
# softmax and layer_norm are not here: they compute their statistics in float32 themselves
FLOAT32_ANCHORS = ("reduce",)


def check_precision(precision: str) -> str:
    if precision not in PRECISIONS:
        raise GraphError(f"unknown precision {precision!r}; use one of {', '.join(PRECISIONS)}")
    return precision


def _np_dtype(dtype: str):
    if dtype == "bfloat16":
        import ml_dtypes

        return ml_dtypes.bfloat16
    return np.dtype(dtype)


def low_max(low: str) -> float:
    """The largest finite value of the low precision (65504 for float16)."""
    import ml_dtypes

    return float(ml_dtypes.finfo(_np_dtype(low)).max)


def to_low(value: np.ndarray, low: str) -> np.ndarray:
    """float32 values in the low precision, finite ones beyond its range saturated to its largest
    finite value rather than overflowing to an infinity (infinities and NaN stay as they are)."""
    v = np.asarray(value, np.float32)
    big = low_max(low)
    return np.where(np.isfinite(v), np.clip(v, -big, big), v).astype(_np_dtype(low))


def beyond_low(n: Node, low: str) -> bool:
    """A float32 constant with finite values the low precision cannot hold (torch.finfo(float32)
    .min in an additive attention mask)."""
    if n.op != CONST or n.dtype != "float32":
        return False
    v = np.asarray(n.value)
    return bool(np.any(np.isfinite(v) & (np.abs(v) > low_max(low))))


ONE_BYTE_CODES = ("int8", "uint8")  # the storage of int8/uint8, 4- and 2-bit and float8 codes


def _only_quantized(graph: Graph) -> set[int]:
    """Float32 elementwise, broadcast or injective nodes (not outputs) whose every reader is a
    QuantizeLinear of them or another such node: values no kernel stores in float. A node
    joining two computed float values (a residual add of a conv's sums and a downsample conv's)
    is not one: fusion gives it one of the two, and the other is a kernel's stored output; codes
    dequantized (one byte an element, stored as such) are no computed float."""
    readers: dict[int, list[Node]] = {}
    for n in graph.nodes:
        for i in n.inputs:
            readers.setdefault(id(i), []).append(n)
    outputs = {id(o) for o in graph.outputs}
    out: set[int] = set()
    for n in reversed(graph.nodes):
        if (not n.is_op or id(n) in outputs or n.dtype != "float32"
                or get_op(n.op).pattern > OpPattern.INJECTIVE):
            continue
        computed = [i for i in n.inputs if i.is_op and i.dtype == "float32"
                    and not (i.op == "dequantize_linear" and i.inputs[0].dtype in ONE_BYTE_CODES)]
        if len(computed) > 1:
            continue
        rs = readers.get(id(n), [])
        if rs and all((r.op == "quantize_linear" and r.inputs[0] is n) or id(r) in out for r in rs):
            out.add(id(n))
    return out


def _keeps_float32(n: Node, is_output: bool) -> bool:
    """Statistics ops; and an opaque op (softmax, layer_norm) whose result is a float32 graph
    output: its kernel takes no epilogue, so the output cast would be a kernel of its own."""
    d = get_op(n.op)
    return d.anchor in FLOAT32_ANCHORS or (is_output and n.dtype == "float32" and d.pattern == OpPattern.OPAQUE)


def _wide_cast(n: Node) -> bool:
    """A cast to float32 of values a half cannot hold: integers of int32 and wider, and a product
    of float8 codes' unscaled float32 sums (ops/codes.py: codes up to 448, or 57344 for e5m2)."""
    if n.op != "cast" or not n.inputs:
        return False
    return n.inputs[0].dtype in ("int32", "uint32", "int64", "uint64") or bool(n.inputs[0].attrs.get("codes"))


class _Rewriter:
    def __init__(self, graph: Graph, low: str):
        self.low = low
        self.outputs = {id(o) for o in graph.outputs}
        self.names = {n.name for n in graph.nodes}
        self.new: dict[int, Node] = {}
        self.float32_outputs: set[int] = set()  # (original) outputs computed in float32
        # (original) elementwise/injective float32 nodes kept in float32 because they read a
        # constant beyond the low range, or such a node (mask arithmetic): see the module doc
        self.wide: set[int] = set()
        self.saturated: dict[int, Node] = {}
        # (original) float32 values of a wide integer before its dequantize scale, and after it
        self.unscaled: set[int] = set()
        self.scaled_sums: set[int] = set()
        self.beyond: dict[int, bool] = {}  # constant -> beyond_low, each looked at once
        # (original) float32 values only ever quantized again, and those computed in float32
        # for that reason (`_quantized_chain`)
        self.to_codes = _only_quantized(graph)
        self.code_chain: set[int] = set()
        self.float32_consts: dict[int, Node] = {}  # constant -> its float32 copy a chain reads

    def fresh(self, base: str) -> str:
        return fresh_name(self.names, base)

    def cast(self, x: Node, dtype: str, name: str = "") -> Node:
        if x.dtype == dtype:
            return x
        attrs, shape, out = infer("cast", {"dtype": dtype}, [x], name or x.name)
        return Node(name or self.fresh(f"{x.name}_to_{dtype}"), "cast", [x], attrs, tuple(shape), out)

    def operand(self, orig: Node, float32: bool) -> Node:
        """`orig`'s rewritten value as a consumer computing in float32 or in the low precision
        reads it: a float32 constant as it was (not rounded and cast back, a kernel of its own),
        a float32 output also read inside the graph cast down for its other consumers."""
        x = self.new[id(orig)]
        if float32:
            if orig.op == CONST and orig.dtype == "float32":
                return orig
            return self.cast(x, "float32") if x.dtype == self.low else x
        if id(orig) in self.wide:
            return self.saturate(orig)
        return self.cast(x, self.low) if id(orig) in self.float32_outputs else x

    def chain_operand(self, orig: Node) -> Node:
        """`orig` as a node of a float32 chain to codes reads it: the chain's and the scaled sums'
        float32 values as they are, a float32 constant as it was (a copy of its own: the rest of
        the graph holds the name in the low precision), anything else cast up."""
        if id(orig) in self.scaled_sums or id(orig) in self.code_chain:
            return self.new[id(orig)]
        if orig.op == CONST and orig.dtype == "float32":  # kept float32, under a name of its own
            if id(orig) not in self.float32_consts:
                self.float32_consts[id(orig)] = Node(self.fresh(f"{orig.name}_f32"), CONST, [], {}, orig.shape,
                                                     orig.dtype, orig.value)
            return self.float32_consts[id(orig)]
        x = self.operand(orig, float32=False)
        return self.cast(x, "float32") if x.dtype == self.low else x

    def saturate(self, orig: Node) -> Node:
        """A float32 mask value as the low precision reads it: clipped to its finite range, then
        cast (elementwise: it fuses into the kernel that computes the value); one per value."""
        got = self.saturated.get(id(orig))
        if got is None:
            x, big = self.new[id(orig)], low_max(self.low)
            attrs, shape, dtype = infer("clip", {"min": -big, "max": big}, [x], x.name)
            clipped = Node(self.fresh(f"{x.name}_saturated"), "clip", [x], attrs, tuple(shape), dtype)
            got = self.saturated[id(orig)] = self.cast(clipped, self.low)
        return got

    def _widens(self, n: Node) -> bool:
        """Whether `n` computes in float32 as mask arithmetic (see the module doc), or as the
        float value of a wide integer (an int8 product's int32 accumulator, past the low
        precision's range) up to its dequantize scale (`_unscaled`). What reads the scaled value
        (bias, ReLU, the residual add, the next quantize) computes in the low precision, as the
        float model's activations do: a float32 residual stream would double its bytes."""
        if n.dtype != "float32" or get_op(n.op).pattern > OpPattern.INJECTIVE:
            return False
        if _wide_cast(n) or any(id(i) in self.unscaled for i in n.inputs):
            (self.scaled_sums if self._scales(n) else self.unscaled).add(id(n))
            return True
        return any(id(i) in self.wide and id(i) not in self.scaled_sums or self._beyond(i) for i in n.inputs)

    def _quantized_chain(self, n: Node) -> bool:
        """Whether `n` computes in float32 because its value is only quantized again (an int8
        conv's epilogue that stores codes alone: scale, bias, the dequantized shortcut, ReLU,
        the next quantize): nothing is stored in float, so the low precision would only add
        conversions and a clip to its range between float32 sums and the quantize. Only a
        chain that starts from float32 values: a scaled sum, or one-byte codes dequantized."""
        if id(n) not in self.to_codes:
            return False
        if n.op == "dequantize_linear":
            return n.inputs[0].dtype in ONE_BYTE_CODES
        return any(id(i) in self.scaled_sums or id(i) in self.code_chain for i in n.inputs)

    def _scales(self, n: Node) -> bool:
        """A dequantize scale: a product with a constant the low precision holds (QDQ's
        `acc * (sx * sw[k])`, qdq.py; a mask's `* finfo.min` is mask arithmetic)."""
        consts = [i for i in n.inputs if i.op == CONST]
        return n.op == "mul" and bool(consts) and not any(self._beyond(i) for i in consts)

    def _beyond(self, n: Node) -> bool:
        if id(n) not in self.beyond:
            self.beyond[id(n)] = beyond_low(n, self.low)
        return self.beyond[id(n)]

    def node(self, n: Node) -> Node:
        low = self.low
        if n.op == INPUT:
            return self.cast(n, low) if n.dtype == "float32" else n
        if n.op == CONST:
            if n.dtype != "float32":
                return n
            return Node(n.name, CONST, [], {}, n.shape, low, to_low(n.value, low))
        if self._widens(n):
            self.wide.add(id(n))
            inputs = [self.operand(i, float32=True) for i in n.inputs]
            attrs, shape, dtype = infer(n.op, dict(n.attrs), inputs, n.name)
            return Node(n.name, n.op, inputs, attrs, tuple(shape), dtype)
        in_chain = self._quantized_chain(n)
        # a chain's nodes, and the quantize ending it (its scale the float32 one the codes' readers use)
        if in_chain or (n.op == "quantize_linear" and id(n.inputs[0]) in self.code_chain):
            if in_chain:
                self.code_chain.add(id(n))
            inputs = [self.chain_operand(i) for i in n.inputs]
            attrs, shape, dtype = infer(n.op, dict(n.attrs), inputs, n.name)
            return Node(n.name, n.op, inputs, attrs, tuple(shape), dtype)
        attrs = dict(n.attrs)
        if n.op == "cast" and attrs.get("dtype") == "float32":
            attrs["dtype"] = low  # the working precision of a float32 model
        if (n.op == "dequantize_linear" and attrs.get("dtype") == "float32" and id(n) not in self.outputs
                and n.inputs[0].dtype in ONE_BYTE_CODES):
            # one-byte codes read as a float activation (a quantized residual): scaled in float32
            # (by the scale their QuantizeLinear used, held in the working precision as its scale is)
            # and given to their readers in the working precision, which holds every such value;
            # wider codes, and a model's output, stay float32
            attrs["dtype"] = low
        is_output = id(n) in self.outputs
        if _keeps_float32(n, is_output):
            inputs = [self.operand(i, float32=True) for i in n.inputs]
            attrs, shape, dtype = infer(n.op, attrs, inputs, n.name)
            if is_output or dtype != "float32":  # an output stays float32: no round trip
                if dtype == "float32":
                    self.float32_outputs.add(id(n))
                return Node(n.name, n.op, inputs, attrs, tuple(shape), dtype)
            out = Node(self.fresh(f"{n.name}_f32"), n.op, inputs, attrs, tuple(shape), dtype)
            return self.cast(out, low, n.name)
        inputs = [self.operand(i, float32=False) for i in n.inputs]
        attrs, shape, dtype = infer(n.op, attrs, inputs, n.name)
        return Node(n.name, n.op, inputs, attrs, tuple(shape), dtype)


def float_precision(precision: str) -> str:
    """The precision the float part of a build computes in: `precision`, or for a quantized one
    the float precision of what is not quantized."""
    return QUANTIZED.get(check_precision(precision), precision)


def convert_precision(graph: Graph, precision: str) -> Graph:
    """The graph computing in `precision` with the same inputs and output dtypes."""
    if check_precision(precision) == "tf32":
        return _mark_tf32(graph)
    low = LOW.get(precision)
    if low is None:
        return graph
    rw = _Rewriter(graph, low)
    for n in graph.nodes:
        rw.new[id(n)] = rw.node(n)
    outputs, done = [], {}
    for o in graph.outputs:
        if id(o) in done:  # a value given twice as an output: one cast back
            outputs.append(done[id(o)])
            continue
        got = rw.new[id(o)]
        if o.op == INPUT:  # given back as it came, not its low-precision copy
            got = o
        elif got.dtype != o.dtype:
            # the output keeps its name and dtype; the low-precision value (a node this rewrite
            # built) is renamed in place, so every reader built so far, casts included, reads it;
            # a constant is given back as it was, exact, rather than cast back from its copy
            got.name = rw.fresh(f"{o.name}_{precision}")
            got = o if o.op == CONST else rw.cast(got, o.dtype, o.name)
        outputs.append(got)
        done[id(o)] = got
    _rename_float32_twins(outputs, rw)
    return Graph(list(graph.inputs), outputs)


def _rename_float32_twins(outputs: list[Node], rw: _Rewriter) -> None:
    """A float32 constant some consumers read as it was (`operand`) while others read its
    low-precision copy, which keeps its name (a quantized residual's DequantizeLinear reads the
    scale its QuantizeLinear reads in float32): the float32 one renamed, as `chain_operand`'s
    copies are, in the rebuilt consumers. Graphs without such a pair keep every name."""
    nodes = topo_order(outputs)
    low = {n.name for n in nodes if n.op == CONST and n.dtype != "float32"}
    twins = {id(n): n for n in nodes if n.op == CONST and n.dtype == "float32" and n.name in low}
    if not twins:
        return
    renamed = {k: Node(rw.fresh(f"{n.name}_f32"), CONST, [], {}, n.shape, n.dtype, n.value) for k, n in twins.items()}
    for n in nodes:  # the consumers are rebuilt nodes (the original graph's are left alone)
        if any(id(i) in renamed for i in n.inputs):
            n.inputs = [renamed.get(id(i), i) for i in n.inputs]


def _mark_tf32(graph: Graph) -> Graph:
    """Every float32 op that takes the `math` attribute (matrix products) set to math='tf32'."""
    def rule(n: Node, inputs: list[Node], ctx: RewriteContext) -> Node | None:
        if "math" in get_op(n.op).optional and all(i.dtype == "float32" for i in inputs):
            return op_node(n.name, n.op, inputs, {**n.attrs, "math": "tf32"})
        return None

    return rewrite(graph, rule)
