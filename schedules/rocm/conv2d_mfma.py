"""ROCm matrix-core (MFMA) implicit-GEMM conv2d template (family "rocm"): float16 or float32
in, float32 accumulation, the fused epilogue applied on the way out.

The conv is viewed as a GEMM as in the CUDA implicit-GEMM template (M = N*OH*OW, N = K output
channels, reduction R = C*KH*KW; `transform_block_layout` + `reindex`): the im2col tile A[m, r]
and the weight tile B[r, k] (stored transposed: the MFMA B operand is R-major) are the fills of
the shared MFMA GEMM schedule (mfma_gemm.py: wavefronts, LDS, fallback, and why untuned builds
do not pick it). Groups 1. After the reindex, `pad_einsum` pads M, K and R to whole tiles, the
pads becoming the fills (zeros past the end) and the padded outputs never stored: ResNet's 14x14
and 7x7 layers at batch 1 and a first layer's C*KH*KW = 27 are exact.
"""
from __future__ import annotations

from tvm import s_tir

from ...ops.conv2d import Conv2dGeometry
from ..common import inline_all, to_implicit_gemm
from ..registry import DATA, WEIGHT, KernelInfo, register
from ..space import Config
from .mfma import TILE
from .mfma_gemm import MfmaGemm, inline_copies, padded_tiles


def _through_pad(sch: s_tir.Schedule, fill, conv):
    """The block that fills the GEMM's operand: the reindex inlined into its pad, if padded."""
    (pad,) = sch.get_consumers(fill)
    if sch.get(pad).name_hint == sch.get(conv).name_hint:
        return fill
    sch.compute_inline(fill)
    return pad


@register("rocm", "conv2d")
class Conv2dMfma(MfmaGemm):
    name = "conv2d_mfma"

    def accepts(self, info: KernelInfo) -> bool:
        g = info.geometry
        return info.dtype in self.dtypes and g is not None and g.groups == 1 and g.split_k == 1

    def tiles(self, info: KernelInfo) -> tuple[int, int, int, int]:
        g: Conv2dGeometry = info.geometry
        return 1, padded_tiles(g.m, 4), padded_tiles(g.k, 4), padded_tiles(g.r, 2)

    def normalize(self, sch: s_tir.Schedule, info: KernelInfo, cfg: Config):
        g: Conv2dGeometry = info.geometry
        anchor = info.anchor_block
        inline_all(sch, info, keep=info.staged(DATA, WEIGHT))
        conv = sch.get_sblock(anchor)
        epilogue = [b for b in info.output_blocks if b != anchor]
        a_fill, b_fill = to_implicit_gemm(sch, info, g, epilogue)
        transpose = lambda i, j: (j, i)  # noqa: E731
        sch.transform_layout(b_fill, ("write", 0), transpose)
        sch.transform_block_layout(b_fill, transpose)
        _, tm, tn, tr = self.tiles(info)
        sch.pad_einsum(conv, [TILE * tm, TILE * tn, TILE * tr])
        a_fill, b_fill = _through_pad(sch, a_fill, conv), _through_pad(sch, b_fill, conv)
        inline_copies(sch, conv, epilogue)
        return conv, a_fill, b_fill, epilogue
