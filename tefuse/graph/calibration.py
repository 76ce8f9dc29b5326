"""Post-training int8 or fp8 quantization of a float model: the activation thresholds a calibration
found (`Calibration`), and the QuantizeLinear / DequantizeLinear pairs they put around each conv2d,
dense and matmul (`insert_qdq`), as onnxruntime's quantize_static (int8) and TensorRT's explicit
FP8 quantization (float8 e4m3fn) write them. The QDQ pass (qdq.py) then makes those products int8
or float8 anchors exactly as it does an imported QDQ model's: one path for both, and the same
numerics.

- Activations: one symmetric scale per tensor, threshold / QMAX (127 for int8, e4m3fn's largest
  finite value 448 for fp8), zero point 0, quantized as x times 1 / scale (TensorRT's way: one
  multiply an element where ONNX divides). The thresholds come from running the float model on
  sample inputs (tefuse/calibrate.py: max, percentile or entropy, as TensorRT's calibrators).
- Weights: symmetric, one scale per output channel (max |w| / QMAX), from the constants here.
- A pinned product, or one the calibration has no threshold for, stays float; so does a conv
  over fewer than MIN_CHANNELS input channels a group (an image model's stem, 3 channels): a
  16-byte copy of its one-byte codes would hold more than a pixel, so its tile loads go element
  by element, while in the float precision its channels are padded to a vector and it runs on
  the tensor cores; its K (3 x 7 x 7) is also too short for int8's rate to pay. Keeping the first
  layer float is the usual practice of post-training quantization.
- Residuals: an add of two values of one shape, one of them a value a conv reads quantized and
  the other computed from that conv's output (a residual block: its shortcut and its body),
  reads the shortcut's codes, dequantized, as the conv does (`Calibration.residuals`, on by
  default). Where nothing else reads the value in float, the kernel that makes it stores only
  its one-byte codes, and the add reads a byte an element instead of two. NVIDIA's quantization
  guidance puts a QDQ pair on the residual input for this reason (TensorRT then fuses the add
  into the int8 conv); without it, ResNet-50's block outputs were stored twice (fp16 and codes).
- Projection shortcuts: where a residual block's shortcut is a conv of the block's input (a
  ResNet's downsampling 1x1 conv, `projection_shortcuts`), that conv's output is quantized too,
  with a threshold of its own (keyed by the add's name), so its kernel stores one-byte codes and
  the body's last conv reads them, as TensorRT's int8 ResNets do. At batch 256 the four such
  shortcuts of ResNet-50 wrote and read 770 MB in fp16, half of it in codes. A calibration
  without the add's threshold (one saved before these were collected), or with the add or the
  shortcut's conv pinned, leaves the shortcut float.

A Calibration is plain data (JSON), so the scales a calibration found are saved and reused
without the samples.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Iterable, Optional

import numpy as np

from ..errors import GraphError
from .ir import CONST, Graph, Node, RewriteContext, fresh_name, op_node, rewrite

QMAX = 127  # symmetric int8: [-127, 127], so -x quantizes to -q
MIN_CHANNELS = 16  # a conv's input channels a group for its codes to fill a 16-byte copy
METHODS = ("max", "percentile", "entropy")


@dataclass(frozen=True)
class QuantFormat:
    """What a quantized precision's products compute on: the type QuantizeLinear writes and the
    largest magnitude a scale maps the threshold to."""

    dtype: str
    qmax: float


# quantized precision -> its format (graph/precision.QUANTIZED names the float rest's precision)
FORMATS = {"int8": QuantFormat("int8", QMAX), "fp8": QuantFormat("float8_e4m3fn", 448.0)}


@dataclass(frozen=True)
class Calibration:
    """`thresholds`: product node name -> the largest |value| of its data input to keep (its
    scale is threshold / 127), and a residual add's name -> its projection shortcut's; `pinned`:
    products (or adds) left in float whatever their threshold."""

    method: str
    thresholds: dict[str, float]
    pinned: frozenset[str] = field(default_factory=frozenset)
    residuals: bool = True  # residual adds read their shortcut's codes (insert_qdq)

    def __post_init__(self):
        if self.method not in METHODS:
            raise GraphError(f"calibration method {self.method!r}: use one of {', '.join(METHODS)}")
        bad = {k: v for k, v in self.thresholds.items() if not (np.isfinite(v) and v >= 0)}
        if bad:
            raise GraphError(f"calibration thresholds must be finite and non-negative: {bad}")

    def scale(self, product: str, qmax: float = QMAX) -> Optional[float]:
        """The activation scale of `product`'s data input (its threshold maps to `qmax`), or of
        a residual add's projection shortcut where `product` names the add; None where it stays
        float."""
        if product in self.pinned or product not in self.thresholds:
            return None
        return max(float(self.thresholds[product]), np.finfo(np.float32).tiny) / qmax

    def pin(self, products: Iterable[str]) -> "Calibration":
        return replace(self, pinned=self.pinned | frozenset(products))

    def to_json(self) -> str:
        return json.dumps({"method": self.method, "thresholds": self.thresholds, "pinned": sorted(self.pinned),
                           "residuals": self.residuals}, indent=1, sort_keys=True)

    @staticmethod
    def from_json(text: str, where: str = "calibration") -> "Calibration":
        try:
            d = json.loads(text)
            residuals = d.get("residuals", True)
            if not isinstance(residuals, bool):
                raise TypeError(f"residuals must be true or false, got {residuals!r}")
            return Calibration(d["method"], {str(k): float(v) for k, v in d["thresholds"].items()},
                               frozenset(d.get("pinned", ())), residuals)
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise GraphError(f"{where}: not a calibration ({type(e).__name__}: {e})") from None


def _weight_axes(n: Node) -> Optional[tuple[int, tuple[int, ...]]]:
    """(output-channel axis, reduced axes) of a product's constant weight, or None if the QDQ
    pass would not take the product (the conditions of qdq._quantized)."""
    if n.dtype != "float32" or len(n.inputs) < 2 or n.inputs[1].op != CONST or any(
            n.attrs.get(a) for a in ("math", "split_k", "trans_b", "weight_layout")) or n.attrs.get("alpha", 1.0) != 1.0:
        return None
    if n.op == "conv2d":
        w = n.inputs[1].value
        ok = n.attrs.get("layout") == "NCHW" and w.ndim == 4 and w.shape[1] >= MIN_CHANNELS
        return (0, (1, 2, 3)) if ok else None
    if n.op == "dense":
        return 0, (1,)
    if n.op == "matmul" and n.inputs[1].value.ndim == 2:
        return 1, (0,)
    return None


def products(graph: Graph) -> list[Node]:
    """The conv2d / dense / matmul nodes insert_qdq can quantize (float32, constant weight)."""
    return [n for n in graph.nodes if n.is_op and n.op in ("conv2d", "dense", "matmul") and _weight_axes(n)]


def weight_scales(w: np.ndarray, k_axis: int, reduce_axes: tuple[int, ...],
                  fmt: QuantFormat = FORMATS["int8"]) -> tuple[np.ndarray, np.ndarray]:
    """(quantized weights, float32 scale per output channel): symmetric, max |w| / qmax per
    channel, rounded half to even as QuantizeLinear rounds; float8 weights as their uint8 codes
    (saturated, as QuantizeLinear's default)."""
    amax = np.abs(w).max(axis=reduce_axes).astype(np.float64)
    scale = np.where(amax > 0, amax / fmt.qmax, 1.0).astype(np.float32)
    shape = [1] * w.ndim
    shape[k_axis] = -1
    r = w / scale.reshape(shape)
    if fmt.dtype == "int8":
        return np.clip(np.rint(r), -QMAX, QMAX).astype(np.int8), scale
    import ml_dtypes

    return np.clip(r, -fmt.qmax, fmt.qmax).astype(getattr(ml_dtypes, fmt.dtype)).view(np.uint8), scale


def insert_qdq(graph: Graph, calibration: Calibration, precision: str = "int8") -> Graph:
    """The graph with each calibrated product's data input and weight behind QuantizeLinear /
    DequantizeLinear in `precision`'s format, and each residual add reading its shortcut as
    codes: an identity shortcut the codes its conv reads, a projection shortcut the conv's output
    behind a pair at the add's threshold (see the module)."""
    if precision not in FORMATS:
        raise GraphError(f"quantized precision {precision!r}: use one of {', '.join(FORMATS)}")
    fmt = FORMATS[precision]
    codes = fmt.dtype != "int8"  # float8: codes held as uint8, their type on the dequantize
    zero_dtype = np.uint8 if codes else np.int8
    dq_attrs = {"src": fmt.dtype} if codes else {}
    known = {n.name for n in products(graph)}
    unknown = (set(calibration.thresholds) | set(calibration.pinned)) - {n.name for n in graph.nodes}
    if unknown:
        raise GraphError(f"calibration names product(s) not in the graph: {sorted(unknown)[:5]}")

    quantized: dict[tuple[int, float], Node] = {}  # (data value, scale) -> its dequantize_linear
    codes_of: dict[int, Node] = {}  # data value -> the first dequantize_linear of its codes
    shortcuts = _quantized_shortcuts(graph, calibration)

    def qdq(n: Node, x: Node, sx: float, names: set) -> Node:
        """x behind a QuantizeLinear / DequantizeLinear pair of scale sx, named after n."""
        s = _const(names, n, "x_scale", np.array(sx, np.float32))
        z = _const(names, n, "x_zero", np.array(0, zero_dtype))
        xq = op_node(fresh_name(names, f"{n.name}_xq"), "quantize_linear", [x, s, z],
                     {"dtype": fmt.dtype, "reciprocal": True})
        return op_node(fresh_name(names, f"{n.name}_xdq"), "dequantize_linear", [xq, s, z], dict(dq_attrs))

    def rule(n: Node, ins: list[Node], ctx: RewriteContext) -> Optional[Node]:
        if n.op == "add" and calibration.residuals:
            sx = calibration.scale(n.name, fmt.qmax) if n.name in shortcuts else None
            if sx is None:
                return _residual_add(n, ins, codes_of)
            ins = list(ins)
            ins[shortcuts[n.name]] = qdq(n, ins[shortcuts[n.name]], sx, ctx.names)
            return Node(n.name, n.op, ins, n.attrs, n.shape, n.dtype)
        sx = calibration.scale(n.name, fmt.qmax) if n.name in known else None
        if sx is None:
            return None
        k_axis, reduce_axes = _weight_axes(n)
        names = ctx.names

        xdq = quantized.get((id(ins[0]), sx))
        if xdq is None:  # products reading one value at one scale share its QuantizeLinear
            xdq = qdq(n, ins[0], sx, names)
            quantized[(id(ins[0]), sx)] = xdq
            codes_of.setdefault(id(ins[0]), xdq)
        wq, sw = weight_scales(ins[1].value, k_axis, reduce_axes, fmt)
        wdq = op_node(fresh_name(names, f"{n.name}_wdq"), "dequantize_linear",
                      [_const(names, n, "wq", wq), _const(names, n, "w_scale", sw),
                       _const(names, n, "w_zero", np.zeros(sw.shape, zero_dtype))],
                      {"axis": k_axis, **dq_attrs})
        return Node(n.name, n.op, [xdq, wdq, *ins[2:]], n.attrs, n.shape, n.dtype)

    return rewrite(graph, rule)


def _const(names: set, owner: Node, base: str, value: np.ndarray) -> Node:
    """A constant named after the node it serves."""
    return Node(fresh_name(names, f"{owner.name}_{base}"), CONST, [], {}, value.shape, str(value.dtype), value)


def _residual_add(n: Node, ins: list[Node], codes_of: dict[int, Node]) -> Optional[Node]:
    """A residual add reading the codes of its shortcut (module docstring), or None. A residual:
    an add of two float32 values of its own shape (a bias or a broadcast operand is not a
    shortcut), one of them a value some conv reads quantized, the other computed from that
    conv's output (the block's body), so the conv is rewritten before the add whatever the
    graph's order; a transformer's adds (a Linear's input after a LayerNorm) stay float."""
    if not _adds_two_of_its_kind(n, ins):
        return None
    quantized = [k for k, i in enumerate(ins) if id(i) in codes_of]
    if len(quantized) != 1:  # both (or neither): the add's own output needs one float operand
        return None
    k = quantized[0]
    dq = codes_of[id(ins[k])]
    if not _reads_in_body(ins[1 - k], dq):
        return None
    ins = list(ins)
    ins[k] = dq
    return Node(n.name, n.op, ins, n.attrs, n.shape, n.dtype)


def _adds_two_of_its_kind(n: Node, ins: list[Node]) -> bool:
    """Whether n, a float32 add, joins two values of its own shape and type (a bias or a broadcast
    operand is no shortcut)."""
    return n.dtype == "float32" and len(ins) == 2 and all(
        tuple(i.shape) == tuple(n.shape) and i.dtype == n.dtype for i in ins)


BODY_SEARCH = 64  # nodes looked at above an add for its block's conv (a bottleneck has about ten)
SHORTCUT_TAIL = ("bias_add", "batch_norm")  # per-channel ops between a projection conv and its add


def _reads_in_body(x: Node, data: Node) -> bool:
    """Whether a conv reading `data` (a value, or the dequantize of its codes) is among x's
    producers (within BODY_SEARCH nodes)."""
    seen, todo = set(), [x]
    while todo and len(seen) < BODY_SEARCH:
        m = todo.pop()
        if id(m) in seen or not m.is_op:
            continue
        seen.add(id(m))
        if m.op == "conv2d" and m.inputs[0] is data:
            return True
        todo.extend(m.inputs)
    return False


def _projection_conv(s: Node, readers: dict[int, int]) -> Optional[Node]:
    """The quantizable conv whose output `s` is, directly or through a bias or a batch norm each
    read by the next alone; else None."""
    for _ in range(len(SHORTCUT_TAIL) + 1):
        if s.op == "conv2d":
            return s if _weight_axes(s) and s.inputs[0].op != CONST else None
        if s.op not in SHORTCUT_TAIL or readers[id(s.inputs[0])] != 1:
            return None
        s = s.inputs[0]
    return None


def _quantized_shortcuts(graph: Graph, calibration: Calibration) -> dict[str, int]:
    """`projection_shortcuts` that the calibration quantizes: none with float residuals, nor
    where the shortcut's conv is pinned (its output stays float as the user asked)."""
    if not calibration.residuals:
        return {}
    return {add: k for add, (k, conv) in _projections(graph).items() if conv.name not in calibration.pinned}


def projection_shortcuts(graph: Graph) -> dict[str, int]:
    """Residual add name -> which of its operands is a projection shortcut: of two float32
    operands of the add's shape, the one read by the add alone that is a quantizable conv's
    output (through a bias or batch norm) where that conv's input is what the other operand's
    body convolves too (a ResNet's downsampling block: the 1x1 shortcut conv and the body's first
    conv read the block's input)."""
    return {add: k for add, (k, _) in _projections(graph).items()}


def _projections(graph: Graph) -> dict[str, tuple[int, Node]]:
    """`projection_shortcuts`, each with its shortcut's conv."""
    readers = graph.reader_counts()
    found = {}
    for n in graph.nodes:
        if not (n.is_op and n.op == "add" and _adds_two_of_its_kind(n, n.inputs)):
            continue
        sides = []
        for k, s in enumerate(n.inputs):
            conv = _projection_conv(s, readers) if readers[id(s)] == 1 else None
            if conv is not None and _reads_in_body(n.inputs[1 - k], conv.inputs[0]):
                sides.append((k, conv))
        if len(sides) == 1:
            found[n.name] = sides[0]
    return found
