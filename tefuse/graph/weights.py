"""Weight layout: GEMM weights stored [N, K] (K fastest), as Hopper's wgmma reads B.

A matmul by a constant 2-D weight reads it [N, K], as a Linear keeps it. ONNX exporters write a Linear over a 3-D activation (a transformer's projections and MLP) as
MatMul(x[..., K], W.T[K, N]) with the transposed weight as an initializer. Hopper's wgmma reads
B from shared memory K-major only for 16-bit types in tefuse's template, so such a matmul would
fall back to mma.sync. Like TensorRT, which picks its weights' layout at build time, this pass
transposes the constant once here and marks the matmul `trans_b`: the GEMM then reads B [N, K]
(K fastest) and all of x's rows form its M (batch dims included).

An NHWC conv's constant HWIO weight becomes OHWI (`weight_layout="OHWI"`): its implicit GEMM's
B is then [K_out, ky*kx*C], K-major, in the order its A (the NHWC input) is read; cuDNN keeps
channels-last weights the same way (KRSC). Only where wgmma runs (`convs=True`, sm_90) and only
convs whose tile copies move 16 bytes (C a multiple of 8, or of 4 in float32), so other
templates keep HWIO; an image's 3 channels are zero-padded to 4 first, 8 bytes a pixel in
fp16/bf16 and 16 in float32 (`padded_channels`, `_pad_channels`).

A conv over an image's channels (padded to one 8- or 16-byte copy a pixel: the 7x7 stem) also gets
its kernel rows widened with zero taps to a power of two (7 -> 8, `row_taps`): its K (ky, kx, c)
then steps through whole copies and whole kernel rows, so the tile copy's padding test is the same
for the lanes of a pixel and the copy is one predicated cp.async; with 7 taps a row the test
is `(64 j + 8 t + lane) // 56`, which TVM cannot prove lane-invariant, and the copy went element
by element, synchronously (3.5x cuDNN's time on the H100 at batch 16). Only where the padded
reduction takes no more 64-deep steps than before (the fp16 stem: 196 and 224 both take 4; with
8 channels, as before its pixels were paired, 392 and 448 took 7). The extra tap reads a pixel or padding times a zero weight: an infinite input pixel there would give NaN.

The same holds for float32 products built with math='tf32' (`--precision tf32`): Hopper's wgmma
reads tf32 operands K-major only.

int8 products (a quantized model's anchors, graph/qdq.py) read their constant weight [N, K] or
OHWI wherever mma.sync runs (`int8=True`, sm_80+): its s8 instruction takes both operands
K-major, which ldmatrix loads from a K-major tile as it is, while a [K, N] int8 tile cannot be
transposed by ldmatrix (16-bit elements only) and went through 64 byte-wide shared loads a
thread each k step. Only convs over whole 16-byte copies of channels (the stem keeps HWIO).
Hopper's wgmma reads 8-bit operands K-major only too: int8, and float8 products on their codes.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..errors import GraphError
from ..ops.value import hinted_dim
from .ir import CONST, INPUT, Graph, Node, RewriteContext, fresh_name, op_node, pad_after, rewrite


TENSOR_CORE_DTYPES = ("float16", "bfloat16")  # what the wgmma path multiplies (and tf32 float32)
INT8_DTYPES = ("int8",)  # what mma.sync's s8 products multiply, both operands K-major
HWIO_TO_OHWI = (3, 0, 1, 2)


def tensor_core_operand(n: Node, w: Node) -> bool:
    return w.dtype in TENSOR_CORE_DTYPES or (w.dtype == "float32" and n.attrs.get("math") == "tf32")


def one_byte_operand(n: Node, w: Node) -> bool:
    """An int8 product's weight, or float8 codes (ops/codes.py): both read K-major by the
    tensor cores' 8-bit instructions."""
    return w.dtype in INT8_DTYPES or bool(n.attrs.get("codes"))


def _operand(n: Node, w: Node, floats: bool, int8: bool) -> bool:
    """Whether the weight pass takes this product's weight: a float tensor-core operand (floats)
    or a one-byte one (int8)."""
    return (floats and tensor_core_operand(n, w)) or (int8 and one_byte_operand(n, w))


def vector_lanes(dtype: str) -> int:
    """Elements in 16 bytes, what one cp.async moves: 8 of 16 bits, 4 float32s."""
    return 16 // np.dtype("float16" if dtype == "bfloat16" else dtype).itemsize


def _candidate(n: Node, int8: bool = False) -> bool:
    if n.op != "matmul" or n.attrs.get("trans_b") or len(n.inputs) != 2:
        return False
    a, b = n.inputs
    return b.op == CONST and len(b.shape) == 2 and len(a.shape) >= 2 and _operand(n, b, True, int8)


def _nk_conv(n: Node, min_mn: int, floats: bool = True, int8: bool = False) -> bool:
    """An NHWC conv with an HWIO tensor-core weight (float: `floats`; int8: `int8`) whose implicit
    GEMM is big enough for a tensor-core tile: what wgmma (mma.sync for int8) reads best as OHWI,
    wherever the weight comes from."""
    if n.op != "conv2d" or n.attrs.get("layout") != "NHWC" or n.attrs.get("weight_layout"):
        return False
    w = n.inputs[1]
    if not _operand(n, w, floats, int8) or n.attrs.get("groups", 1) != 1:
        return False
    m = hinted_dim(n.shape[0] * n.shape[1] * n.shape[2])  # a symbolic batch at its range's opt
    return w.shape[3] >= min_mn and m >= min_mn


def _conv_candidate(n: Node, min_mn: int, floats: bool, int8: bool) -> bool:
    if not _nk_conv(n, min_mn, floats, int8) or n.inputs[1].op != CONST:
        return False
    c, lanes = n.inputs[0].shape[3], vector_lanes(n.inputs[1].dtype)
    if one_byte_operand(n, n.inputs[1]):
        return c % lanes == 0
    return c % lanes == 0 or c < lanes


def input_conv_candidate(n: Node, min_mn: int) -> bool:
    """Whether an NHWC conv whose weight is a graph input (a FusionPlan's run-time weight) should
    read it in its ConvForm on Hopper (`form_weight_inputs`): the constant pass's conditions. An
    image's few channels are padded as the constant pass pads them: the input by a copy before
    the conv, the weight when it is set."""
    if not _nk_conv(n, min_mn) or n.inputs[1].op != INPUT:
        return False
    c, lanes = n.inputs[0].shape[3], vector_lanes(n.inputs[1].dtype)
    return c % lanes == 0 or c < lanes


def to_layout(v, src: str, dst: str):
    """A 4-D array held in layout `src` (e.g. HWIO) as `dst` (e.g. OHWI), contiguous: a numpy
    array, or anything with numpy's `transpose` (or torch's `permute`) and a copy."""
    perm = tuple(src.index(axis) for axis in dst)
    if isinstance(v, np.ndarray) or not hasattr(v, "permute"):
        return np.ascontiguousarray(np.asarray(v).transpose(perm))
    return v.permute(*perm).contiguous()


def ohwi_weight_inputs(graph: Graph, names: set[str]) -> Graph:
    """The graph with the HWIO weight inputs named `names` declared OHWI (same names) and the
    NHWC convs that read them marked `weight_layout="OHWI"`: the caller feeds them converted
    (`to_layout`), once, where the constant pass converts constants at build time."""
    swapped = {i.name: Node(i.name, INPUT, [], dict(i.attrs), tuple(i.shape[a] for a in HWIO_TO_OHWI), i.dtype)
               for i in graph.inputs if i.name in names}
    return redeclared_weight_inputs(graph, swapped, {"weight_layout": "OHWI"}, lambda n: True,
                                    lambda name: "a conv's weight")


def redeclared_weight_inputs(graph: Graph, swapped: dict[str, Node], attrs, reader_ok, what) -> Graph:
    """The graph with its weight inputs replaced by `swapped` ({name: the input declared anew,
    same name}) and each conv reading one rebuilt with `attrs` added, its output shape unchanged.
    `attrs` is a dict, or a function (conv, its new inputs, the graph's names) -> dict that may
    also replace the conv's data input in that list (an image padded to whole copies). An input
    read otherwise (another op, another operand, a conv `reader_ok` refuses) is a GraphError
    naming `what(name)` it may only be."""
    names = {n.name for n in (*graph.nodes, *graph.inputs)}
    new: dict[int, Node] = {}
    for n in graph.nodes:
        if not n.is_op:
            new[id(n)] = swapped.get(n.name, n) if n.op == INPUT else n
            continue
        inputs = [new[id(i)] for i in n.inputs]
        reads = [k for k, i in enumerate(n.inputs) if i.op == INPUT and i.name in swapped]
        if reads and (n.op != "conv2d" or reads != [1] or not reader_ok(n)):
            name = n.inputs[reads[0]].name
            raise GraphError(f"{n.name} ({n.op}) reads {name}, which is not only {what(name)}")
        if reads:
            added = attrs(n, inputs, names) if callable(attrs) else attrs
            out = op_node(n.name, n.op, inputs, {**n.attrs, **added})
            assert out.shape == n.shape, f"{n.name}: {added} changed its shape {n.shape} -> {out.shape}"
            new[id(n)] = out
        else:
            new[id(n)] = Node(n.name, n.op, inputs, n.attrs, n.shape, n.dtype, n.value)
    return Graph([swapped.get(i.name, i) for i in graph.inputs], [new[id(o)] for o in graph.outputs])


MIN_PIXEL_BYTES = 8  # an image's pixel padded to at least one 8-byte copy (cp.async moves 4, 8 or 16)


def padded_channels(c: int, lanes: int) -> int:
    """Channels a conv's input is zero-padded to: whole 16-byte chunks (`lanes` elements) from
    `lanes` channels on; fewer (an image's 3) to the next power of two of at least 8 bytes, so a
    pixel is one 8-byte copy and a kernel row a power of two of them. fp16's 3 channels take 4, not
    8: the 7x7 stem's reduction is then 7 x 8 x 4 = 224 deep (4 wgmma steps of 64), where 8
    channels made it 448 (7 steps), half of them multiplying zeros."""
    if c >= lanes:
        return -(-c // lanes) * lanes
    itemsize = CHUNK_BYTES // lanes
    return max(1 << (c - 1).bit_length(), MIN_PIXEL_BYTES // itemsize)


def _pad_channels(x: Node, c8: int, names: set) -> Node:
    """x [N, H, W, C] zero-padded to C8 channels: an image's 3 channels become 4 (8 bytes a pixel
    in fp16, 16 in float32), so the conv's tile copies move whole vectors, as TensorRT and cuDNN pad a
    first layer."""
    return pad_after(x, 3, c8 - x.shape[3], names, f"c{c8}")


K_STEP_BYTES = 128  # a wgmma tile row: 64 fp16/bf16 or 32 tf32 elements of K per step
CHUNK_BYTES = 16  # what one cp.async moves


def row_taps(kh: int, kw: int, c: int, itemsize: int, dilation: int = 1) -> int:
    """Kernel width to compute a conv with (>= kw; extra taps zero): the next power of two where a
    pixel's channels are one 16-byte chunk (an image's, padded), a kernel row (kw * c elements)
    is neither a whole number of K steps nor fits one evenly, and the padded reduction takes no
    more 64-deep (wgmma) steps. More channels are left alone: 16 at 3x3 would multiply 4/3 as
    much for the same copy gain."""
    step = K_STEP_BYTES // itemsize
    if (kh * kw == 1 or dilation != 1 or c * itemsize > CHUNK_BYTES or c & (c - 1)
            or (kw * c) & (kw * c - 1) == 0):
        return kw
    wide = 1 << (kw - 1).bit_length()
    return wide if -(-kh * wide * c // step) <= -(-kh * kw * c // step) else kw


PAIR = 2  # pixels of 8 bytes one 16-byte copy holds


@dataclass(frozen=True)
class PixelPairs:
    """A conv read two pixels a channel vector (`pair_pixels`): the input [N, H, W, C] seen as
    [N, H, W/2, 2C], the kernel rows shifted right by `shift` zero taps so each window starts on
    an even pixel, then cut into `taps` taps of two; W strides halve."""

    shift: int
    taps: int
    strides: tuple
    padding: tuple
    width: int  # W rounded up to even (a zero column appended where W is odd)


def pair_pixels(geo, c: int, itemsize: int) -> PixelPairs | None:
    """How a conv over 8-byte pixels (an image's 3 channels padded to 4 halves) reads them as
    16-byte pairs, or None where it cannot: a window moving an even number of pixels along W (the
    stride-2 stems), taps 1 apart. Like TensorRT's and MLPerf's space-to-depth stems: the ResNet-50
    stem's 7x7/2 over [224, 224, 4] becomes a 7x4 kernel of stride (2, 1) over [224, 112, 8], so
    each 16-byte copy of its gathered tiles carries two taps, and its K (7 * 4 * 8 = 224) holds 4
    wgmma steps instead of 7 (8 channels, 8 taps a row)."""
    sh, sw = geo.stride
    if c * itemsize * PAIR != CHUNK_BYTES or geo.kw == 1 or sw % PAIR or tuple(geo.dilation) != (1, 1):
        return None
    t, left, b, _ = geo.padding
    shift = left % PAIR
    taps = -(-(geo.kw + shift) // PAIR)
    width = geo.w + geo.w % PAIR
    stride = sw // PAIR
    lp = (left + shift) // PAIR
    right = (geo.ow - 1) * stride + taps - width // PAIR - lp  # what the output's last window reaches past W
    if right < 0:
        return None
    return PixelPairs(shift, taps, (sh, stride), (t, lp, b, right), width)


def _paired_input(x: Node, pairs: PixelPairs, names: set) -> Node:
    """x [N, H, W, C] as [N, H, W/2, 2C] (a view; a zero column first where W is odd)."""
    if pairs.width != x.shape[2]:
        x = pad_after(x, 2, pairs.width - x.shape[2], names, "w2")
    n, h, w, c = x.shape
    return op_node(fresh_name(names, f"{x.name}_pairs"), "reshape", [x], {"shape": (n, h, w // PAIR, c * PAIR)})


@dataclass(frozen=True)
class ConvForm:
    """How wgmma reads an NHWC conv (the module docstring): its weight OHWI over `channels` input
    channels (an image's zero-padded to one 8- or 16-byte copy a pixel, the input padded alike),
    its pixels read in `pairs` where they are, each kernel row widened by `extra` zero taps. One
    form serves a constant weight (converted at build time) and a FusionPlan's run-time one
    (converted when it is set, named by `layout`)."""

    channels: int
    pairs: Optional[PixelPairs] = None
    extra: int = 0
    padded: bool = False  # the input's channels zero-padded to `channels`

    @property
    def layout(self) -> str:
        """The weight's layout name: "OHWI", or "OHWI:c4:pairs1x4:taps1" where the form pads."""
        parts = [f"c{self.channels}"] if self.padded else []
        if self.pairs:
            parts.append(f"pairs{self.pairs.shift}x{self.pairs.taps}")
        if self.extra:
            parts.append(f"taps{self.extra}")
        return "OHWI" if not self.pads else ":".join(["OHWI", *parts])

    @property
    def pads(self) -> bool:
        """Whether the input or the kernel rows are widened (more than a transpose)."""
        return bool(self.pairs or self.extra or self.padded)

    def weight(self, v):
        """An HWIO weight as the kernel reads it, contiguous (`form_weight`)."""
        return form_weight(v, self.layout)

    def weight_shape(self, hwio: tuple) -> tuple:
        kh, kw, _, k = hwio
        c, taps = (self.channels * PAIR, self.pairs.taps) if self.pairs else (self.channels, kw)
        return (k, kh, taps + self.extra, c)

    def input(self, x: Node, names: set) -> Node:
        """The conv's input as the form reads it: channels padded, pixels paired (a view)."""
        if x.shape[3] != self.channels:
            x = _pad_channels(x, self.channels, names)
        return _paired_input(x, self.pairs, names) if self.pairs else x

    def attrs(self, n: Node) -> dict:
        """The conv's attributes reading the form (strides and padding of the paired, widened rows)."""
        out = {"weight_layout": "OHWI"}
        padding = n.geometry.padding
        if self.pairs:
            out["strides"], padding = self.pairs.strides, self.pairs.padding
        if self.pairs or self.extra:  # a wider window ends `extra` pixels further right
            t, left, b, r = padding
            out["padding"] = (t, left, b, r + self.extra)
        return out


_FORM = re.compile(r"OHWI(?::c(\d+))?(?::pairs(\d+)x(\d+))?(?::taps(\d+))?")


def is_form_layout(layout: str) -> bool:
    """Whether `layout` names a padded ConvForm ("OHWI:c4:pairs1x4:taps1"), not plain axes."""
    return layout.startswith("OHWI:") and _FORM.fullmatch(layout) is not None


def _padded(v, axis: int, before: int, after: int):
    """`v` (numpy, or a torch tensor on its device, any dtype) with zeros before and after `axis`."""
    if not before and not after:
        return v
    shape = list(v.shape)
    shape[axis] += before + after
    out = v.new_zeros(shape) if hasattr(v, "new_zeros") else np.zeros(shape, v.dtype)
    index = [slice(None)] * len(shape)
    index[axis] = slice(before, before + v.shape[axis])
    out[tuple(index)] = v
    return out


def form_weight(v, layout: str):
    """An HWIO weight as the ConvForm whose `layout` this is reads it: channels zero-padded,
    pixel pairs (shifted right by `shift` zero taps, each two taps one of 2C channels), each row
    widened by zero taps, then OHWI, contiguous; what a FusionPlan's OperatorArgs does once when
    it is set. A numpy array stays numpy; a torch tensor stays on its device, in its dtype."""
    m = _FORM.fullmatch(layout)
    if m is None:
        raise GraphError(f"{layout!r} is not a conv weight form (OHWI[:cN][:pairsSxT][:tapsE])")
    if not hasattr(v, "new_zeros"):
        v = np.asarray(v)
    channels, shift, taps, extra = (int(g) if g else 0 for g in m.groups())
    v = _padded(v, 2, 0, max(channels - v.shape[2], 0))
    if taps:  # pairs of taps, as the paired input holds its pixels (pixel parity, then channel)
        kh, kw, c, k = v.shape
        v = _padded(v, 1, shift, PAIR * taps - kw - shift).reshape(kh, taps, PAIR * c, k)
    return to_layout(_padded(v, 1, 0, extra), "HWIO", "OHWI")


def conv_form(n: Node) -> ConvForm:
    """The form wgmma reads NHWC conv `n` in (`_nk_conv` holds): an image's channels padded, its
    pixels paired where the window moves by two, rows widened where that saves a copy."""
    w = n.inputs[1]
    lanes = vector_lanes(w.dtype)
    itemsize = CHUNK_BYTES // lanes
    c = n.inputs[0].shape[3]
    c8 = padded_channels(c, lanes)
    pairs = pair_pixels(n.geometry, c8, itemsize)
    kh, kw = (w.shape[0], pairs.taps) if pairs else w.shape[:2]
    extra = row_taps(kh, kw, c8 * PAIR if pairs else c8, itemsize, n.geometry.dilation[1]) - kw
    return ConvForm(c8, pairs, extra, c8 != c)


def form_weight_inputs(graph: Graph, forms: dict[str, ConvForm]) -> Graph:
    """The graph with each HWIO weight input named in `forms` declared as its form reads it
    (same name; `ConvForm.weight` converts the user's array once) and its conv reading it so
    (input padded and paired, strides and padding): what nk_gemm_weights does to a constant.
    An input read otherwise than as a conv's weight is a GraphError."""
    swapped = {i.name: Node(i.name, INPUT, [], dict(i.attrs), forms[i.name].weight_shape(i.shape), i.dtype)
               for i in graph.inputs if i.name in forms}

    def read_in_form(n: Node, inputs: list[Node], names: set) -> dict:
        form = forms[n.inputs[1].name]
        inputs[0] = form.input(inputs[0], names)
        return form.attrs(n)

    return redeclared_weight_inputs(graph, swapped, read_in_form, lambda n: True, lambda name: "a conv's weight")


def nk_gemm_weights(graph: Graph, *, min_mn: int, convs: bool = False, int8: bool = False) -> Graph:
    """The graph with every fp16/bf16 (or tf32) matmul by a constant 2-D weight reading it as
    [N, K], and with convs=True every such NHWC conv's constant weight as OHWI, where its M and N
    are at least `min_mn` (GraphPolicy.min_mn: what a tensor-core tile takes); with int8=True,
    int8 matmuls and NHWC convs the same (module docstring)."""
    def wanted(n: Node) -> bool:
        return _candidate(n, int8) or _conv_candidate(n, min_mn, convs, int8)

    if not any(wanted(n) for n in graph.nodes):
        return graph
    transposed: dict[tuple, Node] = {}  # one [N, K] copy per weight and form, however many products read it

    def rule(n: Node, inputs: list[Node], ctx: RewriteContext) -> Node | None:
        if not wanted(n):
            return None
        w = inputs[1]
        if n.op == "matmul":
            form, attrs = None, {"trans_b": True}
        else:
            form = conv_form(n)
            inputs[0] = form.input(inputs[0], ctx.names)
            attrs = form.attrs(n)
        if (id(w), form) not in transposed:
            v = np.ascontiguousarray(np.asarray(w.value).T) if form is None else form.weight(w.value)
            transposed[id(w), form] = Node(fresh_name(ctx.names, f"{w.name}_nk"), CONST, [], {},
                                           tuple(v.shape), w.dtype, v)
        inputs[1] = transposed[id(w), form]
        out = op_node(n.name, n.op, inputs, {**n.attrs, **attrs})
        assert out.shape == n.shape, f"{n.name}: the weight pass changed its shape {n.shape} -> {out.shape}"
        return out

    return rewrite(graph, rule)
