"""ROCm matrix-core (MFMA) template for dense, matmul and batched matmul (family "rocm"):
float16 or float32 in, float32 accumulation, the fused epilogue (bias, activation, residual,
cast) computed from the accumulators' LDS tile.

The GEMM is brought into the form the shared MFMA schedule takes (mfma_gemm.py) as the CUDA
tensor-core template does it: `pad_einsum` pads M, N and K to whole tiles (zeros in, the padded
outputs never stored: M = 1, ViT's 197 tokens, K = 72 are all exact; before the reindex, as
dlight's iter traits need M and N above 1), the traits name the batch, M, N and K iterators, and
`reindex` gives A[s, m, k] and B[s, k, n] (the MFMA B operand, R-major) as the LDS fills.
"""
from __future__ import annotations

from tvm import s_tir
from tvm.s_tir.dlight.gpu.matmul import IterKind, detect_iter_traits, make_iter_fusion_index_map

from ..common import inline_all
from ..gpu.dense import gemm_dims
from ..registry import DATA, WEIGHT, KernelInfo, register
from ..space import Config
from .mfma import TILE
from .mfma_gemm import MfmaGemm, inline_copies, padded_tiles


def _inline_producers(sch: s_tir.Schedule, block) -> None:
    """Inline the pad blocks feeding a fill: the fill reads the input, zero past its end."""
    for p in sch.get_producers(block):
        sch.compute_inline(p)


@register("rocm", "dense")
class DenseMfma(MfmaGemm):
    name = "dense_mfma"

    def accepts(self, info: KernelInfo) -> bool:
        dims = gemm_dims(info)
        if info.dtype not in self.dtypes or dims is None or info.geometry.stacked_rows_axis is not None:
            return False
        batch, m, n, _ = dims
        # the output is [*batch, M, N] (no 1-D operand dropping M or N)
        return len(info.out_shape) >= 2 and tuple(info.out_shape[-2:]) == (m, n)

    def tiles(self, info: KernelInfo) -> tuple[int, int, int, int]:
        batch, m, n, k = gemm_dims(info)
        return batch, padded_tiles(m, 4), padded_tiles(n, 4), padded_tiles(k, 2)

    def normalize(self, sch: s_tir.Schedule, info: KernelInfo, cfg: Config):
        anchor = info.anchor_block
        staged = info.staged(DATA, WEIGHT)
        inline_all(sch, info, keep=staged)
        block = sch.get_sblock(anchor)
        kinds = [iv.iter_type for iv in sch.get(block).iter_vars]
        if kinds[-1] != 2 or any(kinds[:-1]) or len(kinds) < 3:
            raise ValueError(f"{anchor}: expected spatial loops (batch, M, N) then one reduction loop")
        _, tm, tn, tr = self.tiles(info)
        sch.pad_einsum(block, [1] * (len(kinds) - 3) + [TILE * tm, TILE * tn, TILE * tr])
        for name in staged:
            sch.compute_inline(sch.get_sblock(name))

        a_tr, b_tr, c_tr, block_tr = detect_iter_traits(sch.get(block))
        S, I, J, K = IterKind.kIter_S, IterKind.kIter_I, IterKind.kIter_J, IterKind.kIter_K
        a_fill = sch.reindex(block, ("read", 0))
        b_fill = sch.reindex(block, ("read", 1))
        c_out = sch.reindex(block, ("write", 0))
        sch.transform_layout(a_fill, ("write", 0), make_iter_fusion_index_map(a_tr, [S, I, K]))
        sch.transform_layout(b_fill, ("write", 0), make_iter_fusion_index_map(b_tr, [S, K, J]))
        sch.transform_layout(c_out, ("read", 0), make_iter_fusion_index_map(c_tr, [S, I, J]))
        sch.transform_block_layout(block, make_iter_fusion_index_map(block_tr, [S, I, J, K]))
        _inline_producers(sch, a_fill)
        _inline_producers(sch, b_fill)
        epilogue = [b for b in info.output_blocks if b != anchor]
        inline_copies(sch, block, epilogue)
        return block, a_fill, b_fill, epilogue
