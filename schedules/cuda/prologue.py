"""Which prologues CUDA's templates read well inside a GEMM's operand loads (a prologue rule,
see schedules.registry.register_prologue_rule).

Hopper's wgmma template (WgmmaGemm: gemm/wgmma.py, gemm/template.py), the untuned choice for
fp16/bf16, int8 and float8-code GEMMs whose B is stored [N, K] (Linear weights, OHWI conv weights:
graph/weights.py),
streams both operands global -> shared by cp.async, a pipeline stage ahead. An elementwise
prologue (LayerNorm's normalisation, a cast, an int8 product's QuantizeLinear) turns the A copy into loads computed in registers,
which cp.async cannot do, so the pipeline stalls on them; staging the raw tile and computing it
from shared memory was tried and was slower. Such a prologue runs as its own elementwise kernel
instead, as PyTorch and cuBLAS do it. Injective prologues (reshapes, layout changes) only move
the copy's indices and stay fused, except a pad of the channel axis, which would split the
copy's vectors. A row normalisation takes gathers, adds and casts (an embedding lookup) but no
other data movement.
"""
from __future__ import annotations

from ...fusion import PrologueCandidate
from ...ops import OpPattern, get_op
from ...ops.codes import product_codes
from ...target import device_caps
from ..registry import register_prologue_rule
from .gemm.tiles import MIN_MN, MMA_INT_DTYPES, TC_DTYPES


def streams_operands(anchor, target) -> bool:
    """Whether the anchor's GEMM runs on wgmma when untuned: a dense or conv of fp16/bf16, int8
    or float8-code operands (or float32 ones with math='tf32'), B stored [N, K] (a Linear's
    weight, an OHWI conv weight), M and N big enough for tensor cores, an sm_90 target."""
    if anchor.anchor_kind not in ("dense", "conv2d") or not device_caps(target).has_wgmma:
        return False
    tf32 = anchor.attrs.get("math") == "tf32"
    one_byte = MMA_INT_DTYPES + (("uint8",) if product_codes(anchor.attrs) else ())
    if any(i.dtype not in TC_DTYPES + one_byte and not (tf32 and i.dtype == "float32") for i in anchor.inputs[:2]):
        return False
    geo = get_op(anchor.op).geometry_of([i.shape for i in anchor.inputs], anchor.shape, anchor.attrs)
    if not getattr(geo, "b_nk", False):
        return False
    m, n = (geo.m, geo.k) if anchor.anchor_kind == "conv2d" else (geo.m, geo.n)
    return m >= MIN_MN and n >= MIN_MN


def _pads_channels(c: PrologueCandidate) -> bool:
    """A pad of the last (channel) axis (graph/weights.py's alignment pad of an image's channels):
    read inside the copy, it would split its 16-byte vectors again."""
    def pads_last(p) -> bool:  # ONNX-style pads: begins, then ends
        rank = len(p.shape)
        return bool(p.attrs["pads"][rank - 1] or p.attrs["pads"][2 * rank - 1])

    return any(p.op == "pad" and pads_last(p) for p in c.producers)


# data movement a row normalisation reads its input through on CUDA: an embedding lookup's gathers
NORM_GATHERS = frozenset({"take"})


def _moves_rows(c: PrologueCandidate) -> bool:
    """Data movement other than a gather read inside a row normalisation. A transpose
    (ConvNeXt's channels-last permute before its LayerNorm) would have the template's threads,
    one element of a row each, read a stride apart, once per pass over the row (mean, variance,
    normalise); slices and concats (Swin's patch merging) are left out too until the model zoo
    has checked them on the GPU. An embedding lookup (gathers by token id, adds, casts) joins."""
    return c.anchor.anchor_kind == "norm" and any(
        p.pattern == OpPattern.INJECTIVE and p.op not in NORM_GATHERS for p in c.producers)


@register_prologue_rule("cuda")
def computed_operand_rule(c: PrologueCandidate, target) -> bool:
    if _moves_rows(c):
        return False
    return not (c.computes or _pads_channels(c)) or not streams_operands(c.anchor, target)
