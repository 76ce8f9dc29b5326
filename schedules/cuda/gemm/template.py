"""The registered tensor-core GEMM templates (CUDA family): dense, matmul, batched matmul and
implicit-GEMM conv2d in fp16/bf16 (float32 accumulation) and tf32. `MmaGemm` (mma.sync, wmma) and
`WgmmaGemm` (Hopper's wgmma, with the cluster split-K) are registered side by side for the same
anchors, so tuning measures both where both apply and the untuned choice is the preferred one;
what they share is `TensorCoreGemm`. Each instruction family's schedule lives in its own module
(mma.py, wgmma.py), the cluster split-K in sliced_k.py, cluster.py and passes/cluster_sum.py.
"""
from __future__ import annotations

from tvm import tirx

from ....ops.codes import fast_accumulation, product_codes
from ....options import DEFAULT, BuildOptions
from ....target import device_caps
from ...common import dtype_bytes
from ...registry import DOMINANT, TIR_PIPELINE, KernelInfo, Template, register
from ...space import Config, ConfigSpace
from ..intrin.bf16 import register as register_bf16
from ..intrin.tvm_library import tvm_cuda_intrinsics
from ..intrin.wgmma import bk_of
from ..passes.chunk_guards import chunk_guards
from ..passes.clamp_rows import clamp_rows
from ..passes.dim_bounds import divide_free_bounds
from ..passes.hoist import PIPELINE as HOIST_PIPELINE
from ..passes.late_pipeline import PIPELINE as LATE_PIPELINE
from ..passes.narrow_staging import narrow_staging
from .mma import apply_mma_gemm, mma_fallback_values
from .sliced_k import SLICED, slice_reduction
from .tiles import DEFAULT_CFG, MIN_MN, MMA_INT_DTYPES, TC_DTYPES, pipeline_smem_bytes, tc_shape
from .wgmma import (MAX_PROMOTED_BN, apply_wgmma_gemm, defer_tf32_rounding, fallback_values, keeps_batch_in_flight,
                    promoted_fits, wgmma_admits, wgmma_target)

APPLY = {"mma": apply_mma_gemm, "wmma": apply_mma_gemm, "wgmma": apply_wgmma_gemm}  # intrin -> its schedule


def apply_gemm(sch, gemm_block, epilogue_blocks, cfg, target) -> dict:
    """Schedule a GEMM block with the instruction family `cfg["intrin"]` names (tiles.DEFAULT_CFG's
    when it names none)."""
    return APPLY[(cfg or {}).get("intrin", DEFAULT_CFG["intrin"])](sch, gemm_block, epilogue_blocks, cfg, target)


# block tile (BM, BN) and warp tile (WM, WN): warps = (BM/WM) * (BN/WN), 2 to 8 of them
TILES = [(128, 128, 64, 64), (128, 128, 64, 32), (128, 64, 64, 32), (64, 128, 32, 64), (128, 64, 32, 32),
         (64, 64, 32, 32), (64, 64, 64, 32), (128, 256, 64, 64), (256, 128, 64, 64),
         (192, 192, 64, 64), (128, 192, 64, 64), (192, 128, 64, 64)]
# block tiles of 192 rows or columns: wgmma only (2 or 3 warpgroups of 16-row warp strips, whole
# 16-column fragments); in mma's warp grid they would be 6 or 9 warps. (256x192 never fits Hopper's
# shared memory with its staging tile: wgmma.wgmma_shared_bytes.) Why 192: M = 6304
# (ViT-B/16 at batch 32) is 33 such rows, and 33 x 4 = 132 blocks fill the H100's SMs exactly,
# where 128-row tiles leave a partial wave (cuBLAS's nvjet takes 192x192 there)
WGMMA_ONLY_TILES = frozenset(t for t in TILES if 192 in t[:2])


def _tf32(info: KernelInfo) -> bool:
    """A float32 matrix product built with math='tf32' (operands rounded to TF32 by the op)."""
    return info.dtype == "float32" and info.attrs.get("math") == "tf32"


def _codes(info: KernelInfo) -> str:
    """The float8 format of a product's uint8 operand codes (ops/codes.py), or ""."""
    return product_codes(info.attrs)


def _promoted(info: KernelInfo) -> bool:
    """Whether a product's rows are summed apart and promoted (intrin/wgmma.promotes): float8
    codes, unless the product may sum in the tensor cores' accumulator (fast_accumulation)."""
    return bool(_codes(info)) and not fast_accumulation(info.attrs)


def _intrins(info: KernelInfo) -> list[str]:
    """mma.sync's instruction families for the operands' type, preferred first: TVM's CUDA
    codegen has no float32 wmma fragments, so tf32 is mma.sync only."""
    return ["mma", "wmma"] if info.dtype == "float16" else ["mma"]


def pass_config(intrin: str, target, slices: int = 1, row_sums: bool = False) -> dict:
    """PassContext options the schedule needs: cp.async is emitted only with
    `tirx.use_async_copy`; for wmma, StorageRewrite may alias the fp32 staging tile into an fp16
    one ("tvm_access_ptr element type must match"), so it is off (MergeSharedMemoryAllocations
    still reuses shared memory); mma needs it on (LowerWarpMemory); mma and wgmma need TIR's CSE
    off (their fragments are lowered to registers: schedules/warp_memory.py).
    CUDA kernels compile with hoist.py's pipeline (loop-invariant epilogue math); cluster split-K
    and float8 rows summed with a batch in flight (`row_sums`) with late_pipeline.py's."""
    cfg = {"tirx.use_async_copy": True}
    on_gpu = device_caps(target).kind == "cuda"
    if on_gpu:  # per-channel epilogue math once a thread, not once an element
        cfg[TIR_PIPELINE] = HOIST_PIPELINE
    if on_gpu and intrin == "wmma":
        cfg["tirx.disable_storage_rewrite"] = True
    if on_gpu and intrin in ("wgmma", "mma"):
        # CSE would bind a fragment's `threadIdx.x * 8` to a let variable before LowerWarpMemory,
        # which then cannot tell that an access (the wgmma call's &acc[...], an ldmatrix into an
        # operand fragment) is this lane's
        cfg["tirx.disable_cse_tir"] = True
        if slices > 1 or row_sums:  # cluster_sum's and row_sums' lowering
            cfg[TIR_PIPELINE] = LATE_PIPELINE
    return cfg


def _slices(cfg: Config) -> int:
    return int(cfg.values.get("slices", 1))


# block tiles the slices' sum splits over the CTAs' warps (sliced_k.stage_sum), the sizes measured
SLICED_TILES = ((64, 64), (64, 128), (128, 128))


def _sliceable(info: KernelInfo, slices: int, tile=None) -> bool:
    """Whether the cluster split (sliced_k.py, cluster_sum.py) can take this kernel's reduction:
    its innermost axis (a conv's input channels, a dense's K) in whole 16-byte vectors a slice and
    two k steps a slice at least, a GEMM without a batch axis (the slices take its place),
    channels-last (the sum is computed over the output's (M, N) view); with `tile`, one of
    SLICED_TILES with a whole tile of rows and whole tiles of columns."""
    g = info.geometry
    if info.dtype in MMA_INT_DTYPES or _codes(info):  # not measured; int32 partials are not float32's
        return False
    if info.symbolic:  # the sum's tile of rows is measured whole (m >= BM), which a run-time M need not be
        return False
    if info.anchor_kind == "conv2d" and (g.layout != "NHWC" or g.split_k != 1):
        return False
    if info.anchor_kind == "dense" and getattr(g, "batch", 1) not in (1, None):
        return False
    m, n, k = tc_shape(info)
    if tile is not None and (tuple(tile[:2]) not in SLICED_TILES or m < tile[0] or n % tile[1]):
        return False
    return _channels(info) % (8 * slices) == 0 and k // slices >= 128


def _channels(info: KernelInfo) -> int:
    """The extent of the reduction's innermost axis: what the cluster split divides."""
    return info.geometry.c if info.anchor_kind == "conv2d" else tc_shape(info)[2]


class TensorCoreGemm(Template):
    """What the tensor-core GEMM templates share: which groups they take (fp16/bf16, tf32 and,
    per template, int8 and float8-code GEMMs and non-grouped convs, M and N a fragment or more), how a config is applied (the
    instruction family's schedule, APPLY), the rewrites after it, the compile target and
    options. Tensor cores compute these dtypes several times faster than CUDA cores, so a
    template that takes a group is its untuned choice too (preference DOMINANT)."""

    dtypes = TC_DTYPES  # the operand types it multiplies (float32 too with math='tf32')
    takes_codes = False  # whether it multiplies float8 codes (uint8 operands with a `codes` attr)
    # a symbolic M (a transformer's N*S rows, a conv's N*H*W) is padded to whole block tiles like
    # any M (pad_einsum): every tile, shared and fragment buffer is a constant size, the grid and
    # the tail's predicates take M at launch
    symbolic_extents = True
    # its block tile and stages follow M (fallback_values, mma_fallback_values): at a size far
    # below the one it was scheduled for, most of each tile is padding and SMs sit idle
    size_buckets = True

    def accepts(self, info: KernelInfo) -> bool:
        if info.geometry is None or info.stage("accumulator") is None:
            return False
        if _codes(info):
            if not self.takes_codes:
                return False
        elif info.dtype not in self.dtypes and not _tf32(info):
            return False
        if info.anchor_kind not in ("conv2d", "dense") or getattr(info.geometry, "groups", 1) != 1:
            return False
        m, n, _ = tc_shape(info)
        # a GEMV (ViT's classifier at batch 1) is CUDA cores' work; a kernel over dim ranges is
        # taken whatever its sizes at the ranges' opt (no CUDA-core GEMM takes a symbolic extent)
        return info.symbolic or (m >= MIN_MN and n >= MIN_MN)

    def tiling_knobs(self, s: ConfigSpace, intrins: list[str], bks=(32, 64)) -> None:
        s.define_knob("tile", list(TILES))
        s.define_knob("bk", list(bks))
        s.define_knob("stages", [3, 2, 4, 1, 6, 8])  # 6, 8: deep prefetch for deep, small grids
        s.define_knob("intrin", intrins)
        s.define_knob("vec_out", [4, 8])

    def schedule_checks(self, info: KernelInfo, cfg: Config) -> bool:
        """Off for a symbolic M: TVM cannot always prove that the padded extent covers M (M*196
        against (M*196 + 63) // 64 * 64: it divides both sides by their common factor 4 and
        loses the bound), so its region-cover check would refuse every compute_at after the
        pad; the schedule is the one that passes the checks at every fixed size."""
        return not info.symbolic

    def apply(self, sch, info: KernelInfo, cfg: Config, target) -> None:
        # prologues (pad, casts, layout changes) stay blocks here: the global -> shared copies
        # inline them (dlight's auto_inline_producers), so they are computed while loading tiles
        bm, bn, wm, wn = cfg["tile"]
        m, n, _ = tc_shape(info)
        # a masked (padded) tail stored 8 wide needs a bool x8 predicate, which CUDA codegen lacks
        # (a symbolic M has one wherever M is not a multiple of BM)
        vec_out = min(cfg["vec_out"], 4) if m % bm or n % bn or info.symbolic else cfg["vec_out"]
        nchw = info.anchor_kind == "conv2d" and info.geometry.layout == "NCHW"
        gemm, epilogue, slices = info.stage("accumulator"), info.epilogue, _slices(cfg)
        if slices > 1:  # prepare() split the accumulator block (sliced_k.slice_reduction)
            gemm, epilogue = gemm + SLICED, [gemm, *epilogue]
        apply_gemm(sch, gemm, epilogue,
                   dict(BM=bm, BN=bn, WM=wm, WN=wn, BK=cfg["bk"], stages=cfg["stages"], intrin=cfg["intrin"],
                        vec_out=vec_out, tensorize=device_caps(target).kind == "cuda",
                        a_m_major=nchw, c_m_major=nchw, slices=slices, codes=_codes(info),
                        fast_accum=fast_accumulation(info.attrs)), target)

    def finish(self, mod, info: KernelInfo, cfg: Config, target):
        steps = [clamp_rows, chunk_guards, divide_free_bounds]  # (on llvm too: same numbers)
        if device_caps(target).kind == "cuda":
            steps.append(narrow_staging)
        out = mod.clone()
        for gv, f in mod.functions_items():
            if isinstance(f, tirx.PrimFunc):
                for step in steps:
                    f = step(f)
                out.update_func(gv, f)
        return out

    def prepare(self, func, info: KernelInfo, cfg: Config, target):
        if _slices(cfg) > 1:
            func = slice_reduction(func, info.stage("accumulator"), _slices(cfg))
        if cfg["intrin"] == "wgmma" and _tf32(info):
            return defer_tf32_rounding(func)
        return func

    def compile_target(self, info: KernelInfo, cfg: Config, target):
        if cfg["intrin"] == "wgmma":
            return wgmma_target(target)
        return target

    def pass_config(self, info: KernelInfo, cfg: Config, target) -> dict:
        row_sums = cfg["intrin"] == "wgmma" and _promoted(info) and keeps_batch_in_flight(int(cfg["stages"]))
        return pass_config(cfg["intrin"], target, _slices(cfg), row_sums)

    def shares_launch(self, info: KernelInfo, cfg: Config, target) -> bool:
        """A cluster split's CTAs must be consecutive blocks of one cluster: it keeps its launch."""
        return _slices(cfg) == 1

    def preload(self) -> None:
        tvm_cuda_intrinsics()  # TVM's CUDA tensor intrinsics (intrin/tvm_library.py)

        register_bf16()


def b_rows_along_k(info: KernelInfo) -> bool:
    """Whether B's rows run along the reduction: an NHWC conv's HWIO weight or a [K, N] Linear
    weight (an OIHW or OHWI conv weight and an [N, K] Linear weight are N rows of K)."""
    geo = info.geometry
    if getattr(geo, "b_nk", False):
        return False
    return not (info.anchor_kind == "conv2d" and geo.layout == "NCHW")


@register("cuda", "dense", "conv2d")  # mma.sync / wmma PTX: CUDA only (ROCm has its MFMA templates)
class MmaGemm(TensorCoreGemm):
    """mma.sync (sm_80 and later; fp16, bf16, tf32, int8 into int32) or wmma (fp16) over a grid of warps."""

    name = "tensorcore_gemm"
    dtypes = TC_DTYPES + MMA_INT_DTYPES

    def preference(self, info: KernelInfo, target, options: BuildOptions = DEFAULT) -> int:
        return DOMINANT if device_caps(target).has_mma else -10

    def space(self, info: KernelInfo, target) -> ConfigSpace:
        s = ConfigSpace()
        self.tiling_knobs(s, _intrins(info))
        s.constrain(lambda v: tuple(v["tile"]) not in WGMMA_ONLY_TILES)
        # deep pipelines of big tiles past what a block may opt into (refused at build otherwise)
        optin = device_caps(target).smem_optin
        elem, b_rows_k = dtype_bytes(info.dtype), b_rows_along_k(info)
        s.constrain(lambda v: pipeline_smem_bytes(v["tile"][0], v["tile"][1], v["bk"], v["stages"], elem,
                                                  b_rows_k) <= optin)
        return s

    def fallback(self, info: KernelInfo, target, space: ConfigSpace) -> Config:
        """128x128 blocks of 2x2 warps (64x64 warp tiles) for big GEMMs; 64x64 blocks when
        128x128 would leave most of the GPU idle (M or N small, ResNet's 7x7 layers at batch 1)."""
        m, n, _ = tc_shape(info)
        return space.from_values({**mma_fallback_values(m, n, device_caps(target).sm_count),
                                  "intrin": _intrins(info)[0]})


@register("cuda", "dense", "conv2d")
class WgmmaGemm(TensorCoreGemm):
    """Hopper's wgmma (sm_90): fp16/bf16, tf32, int8 and float8-code GEMMs whose B is stored (N, K) (a dense's
    weights, an NHWC conv's OHWI weights), warpgroups over M, swizzled 128-byte shared tiles, and
    for deep small grids the cluster split-K (`slices`). The untuned choice where it applies; a
    dense whose B runs along N is left to mma.sync untuned, its configs tried when tuning."""

    name = "wgmma_gemm"
    dtypes = TC_DTYPES + MMA_INT_DTYPES  # int8: s8 into s32, tiles 128 deep (one 128-byte row)
    takes_codes = True  # float8 codes: e4m3 / e5m2 into f32, the same byte tiles
    # the one template it was split from: a record of that template with intrin=wgmma is this one's
    record_names = ("tensorcore_gemm",)

    def accepts(self, info: KernelInfo) -> bool:
        return super().accepts(info) and (info.anchor_kind == "dense" or getattr(info.geometry, "b_nk", False))

    def supports(self, geometry, dtype: str, target) -> bool:
        return device_caps(target).has_wgmma

    def preference(self, info: KernelInfo, target, options: BuildOptions = DEFAULT) -> int:
        if not device_caps(target).has_wgmma:
            return -10
        return DOMINANT + 1 if getattr(info.geometry, "b_nk", False) else DOMINANT

    def space(self, info: KernelInfo, target) -> ConfigSpace:
        s = ConfigSpace()
        # a one-byte tile row (int8, float8 codes) holds 128 values; fp16/bf16 and tf32 keep the
        # knob they were tuned with
        one_byte = info.dtype in MMA_INT_DTYPES or _codes(info)
        self.tiling_knobs(s, ["wgmma"], [bk_of(info.dtype)] if one_byte else (32, 64))
        # the CTAs of a cluster sharing an output tile's reduction (passes/cluster_sum.py), implied 1 in
        # the records from before it
        s.define_knob("slices", [1, 2, 4], implied_first=True)
        s.constrain(lambda v: v["slices"] == 1 or (_sliceable(info, v["slices"], v["tile"])
                                                   and v["vec_out"] == 4))  # (the sum stores 4 wide at most)
        s.constrain(lambda v: wgmma_admits(v, info.dtype, TILES))
        if _promoted(info):
            s.constrain(lambda v: v["tile"][1] <= MAX_PROMOTED_BN and promoted_fits(*v["tile"][:2], v["stages"]))
        return s

    def fallback(self, info: KernelInfo, target, space: ConfigSpace) -> Config:
        """fallback_values' tile and stages for the grid; the cluster split for a deep small-grid
        conv (cluster.cluster_split)."""
        m, n, k = tc_shape(info)
        sliceable = info.anchor_kind == "conv2d" and _sliceable(info, 2)
        values = fallback_values(m, n, device_caps(target).sm_count, info.dtype, k,
                                 _channels(info) if sliceable else None)
        if _promoted(info) and values["tile"][1] > MAX_PROMOTED_BN:  # float8: promoted rows (wgmma.py)
            values["tile"] = (128, MAX_PROMOTED_BN, 64, 64)
        return space.from_values(values)

    def fallback_alternatives(self, info: KernelInfo, target, space: ConfigSpace, cfg: Config):
        """A cluster split the sum's schedule refuses (an epilogue it cannot compute 4 wide): the
        same config unsliced."""
        if _slices(cfg) > 1:
            yield space.from_values({**cfg.values, "slices": 1})
