"""Sliced K: an output tile's reduction split into slices, each computed by its own CTA of a
thread-block cluster, and the slices' sum with the fused epilogue (Hopper's wgmma path).

For a GEMM whose output tiles are too few for the GPU and whose reduction is deep (ResNet-50's
7x7 and 14x14 convs at batch 16: about 100 blocks for 132 SMs, 2048-4608 deep). The slices were
also tried as warpgroups of one block (threadIdx.z): slower everywhere, as both passed the
block's barriers. As CTAs of a cluster they keep their own barriers, and their partial tiles are
added through distributed shared memory (passes/cluster_sum.py), never through global memory as a
second kernel's split-K (graph/split_k.py) does.

`slice_reduction` rewrites the func before scheduling (Template.prepare): the accumulator block
becomes TVM's rfactor of it over `slices` ranges of its innermost reduction axis (a batch of
partial GEMMs, `<name>_rf`) and a spatial block `<name>` that adds the slices. The wgmma schedule
binds the slice axis to blockIdx.z (`wgmma.apply_wgmma_gemm`); each CTA copies and
multiplies its own slice's tiles and stores its fragments to its float32 staging tile, and
`stage_sum` computes the sum (and the fused epilogue inlined into it) from the staging tiles.
"""
from __future__ import annotations

import math

from tvm import s_tir, sym, tirx

from ...gpu.lanes import MAX_BOOL_LANES
from .tiles import drop_unit_iters, inline_epilogue, pick_vec, scalarizing_calls

SLICED = "_rf"  # the name rfactor gives the partial-products block
SLICE_AXIS = "blockIdx.z"  # the slices are the CTAs of a cluster, launched along z
CLUSTER_SUM = "tefuse_cluster_sum"  # marks the sum's rows loop, one part a CTA (passes/cluster_sum.py)


def slice_reduction(func: tirx.PrimFunc, block_name: str, slices: int) -> tirx.PrimFunc:
    """`func` with block `block_name` (a reduction whose reduction loops are innermost, as
    te.compute makes them) computed as `slices` partial reductions over contiguous ranges of
    its innermost reduction axis, then added by a spatial block of the same name."""
    sch = s_tir.Schedule(func)
    blk = sch.get_sblock(block_name)
    drop_unit_iters(sch, blk)  # (a 1x1 conv's unit ry, rx would stay as constant bindings)
    loops = sch.get_loops(blk)
    ivs = sch.get(blk).iter_vars
    n_red = sum(iv.iter_type == tirx.IterVar.CommReduce for iv in ivs)
    if n_red == 0 or any(iv.iter_type == tirx.IterVar.CommReduce for iv in ivs[:len(ivs) - n_red]):
        raise ValueError(f"sliced K: block {block_name} does not end in its reduction axes")
    red = loops[-n_red:]
    # the slices split the innermost reduction axis (a conv's input channels), each slice taking
    # every filter tap: a slice's k steps then start on whole channel groups, as the unsliced
    # ones do, so the tile copies stay 16-byte vectors. (Split over the fused taps x channels, a
    # 3x3 conv's slice started mid-tap where TVM cannot prove it, and its copies went scalar.)
    inner = int(sch.get(red[-1]).extent)
    if inner % (8 * slices):
        raise ValueError(f"sliced K: {inner} channels do not split in {slices} slices of whole 16-byte vectors")
    outer, rest = sch.split(red[-1], [slices, None])
    sch.reorder(outer, *red[:-1], rest)
    rf = sch.rfactor(outer, factor_axis=0)
    rf_loops = sch.get_loops(rf)  # the slice loop outermost, in the order of the block's axes
    sch.reorder(rf_loops[-n_red - 1], *rf_loops[:-n_red - 1])
    return sch.mod["main"]


def stage_sum(sch, acc_sh, sum_block: str, cta_loop, *, slices: int, warps: int, vec_max: int, on_gpu: bool,
              target=None):
    """The partial tiles' sum and the epilogue, computed from the staging tiles, on the GPU one
    part of the rows a CTA (the outer rows loop, marked CLUSTER_SUM for cluster_sum.inject).

    `acc_sh` is the staging tiles' copy-out block; it and the pad crop and reindex copies after it
    are inlined into rfactor's write-back (`sum_block`, a reduction over the slices), so that reads
    the staging tiles. The write-back, the epilogue block after it (every later epilogue block
    inlined into that one) and the float32 sums between them are put in the GEMM's (M, N) view,
    where the block's tile is a rectangle, and computed at the block's tile loop `cta_loop` by all
    its threads: each adds `vec` columns of a few rows of the slices into registers, computes the
    epilogue on them and stores them `vec` wide (`target`: what its calls lower to,
    tiles.scalarizing_calls). Returns the store's vector width."""
    block = acc_sh
    for _ in range(8):  # acc_sh, the pad crop, the reindex write-back: single-point copies
        consumers = sch.get_consumers(block)
        if len(consumers) != 1:
            raise ValueError("sliced K: the staging tile has more than one reader")
        nxt = consumers[0]
        sch.compute_inline(block)
        if sch.get(nxt).name_hint == sum_block:
            break
        block = nxt
    else:
        raise ValueError(f"sliced K: no path from the staging tile to {sum_block}")
    wb = sch.get_sblock(sum_block)
    (epi,) = sch.get_consumers(wb)
    inline_epilogue(sch, epi, [])

    # (M, N): every output axis but the last fused into M, as the GEMM's reindex does; the
    # epilogue's own output too, which a reshape after the product (a Linear over [batch, rows,
    # K] viewed back) makes of another rank than the sums'
    shape = [int(x) for x in sch.get(wb).writes[0].source.shape]
    epi_shapes = {tuple(int(x) for x in w.source.shape) for w in sch.get(epi).writes}
    if len(epi_shapes) != 1:
        raise ValueError(f"sliced K: the epilogue's outputs differ in shape ({sorted(epi_shapes)})")
    epi_shape = list(epi_shapes.pop())
    if epi_shape[-1] != shape[-1] or math.prod(epi_shape[:-1]) != math.prod(shape[:-1]):
        raise ValueError(f"sliced K: the epilogue's output {epi_shape} is not the product's rows {shape}")
    imap = lambda fn, n: tirx.IndexMap.from_func(fn, ndim=n, index_dtype="int32")  # noqa: E731
    if len(shape) > 2:
        to_mn = _fuse_rows(shape)
        ivs = sch.get(wb).iter_vars  # (slice, *output axes): rfactor's order; its loops the same
        wb_loops = sch.get_loops(wb)
        sch.reorder(wb_loops[-1], *wb_loops[-len(ivs):-1])  # (the slice loop first)
        # (a row-major fusion is a bijection; TVM's iter-map check does not parse it for a buffer)
        sch.transform_layout(wb, ("write", 0), imap(to_mn, len(shape)), assume_injective_transform=True)
        sch.transform_block_layout(wb, imap(lambda s, *v: (s, *to_mn(*v)), len(ivs)))
    if len(epi_shape) > 2:
        sch.transform_block_layout(epi, imap(_fuse_rows(epi_shape), len(epi_shape)))
    if not _reads_its_own_element(sch.get(epi), sch.get(wb).writes[0].source):
        # a view that reorders the rows (a transpose after the reshape): row m of the epilogue's
        # output is not row m of the sums, which the rows a thread adds up would then miss
        raise ValueError("sliced K: the epilogue reads the sums at other rows than the ones it writes")
    sch.set_scope(wb, 0, "local" if on_gpu else "global")

    out_exts = [int(r.source.shape[-1]) for r in sch.get(epi).writes]
    vec = pick_vec(vec_max, int(sch.get(wb).writes[0].source.shape[-1]), *out_exts)
    if vec > 1 and scalarizing_calls(sch.get(epi).body, target):
        vec = 1
    vec = min(vec, MAX_BOOL_LANES)  # (a ReLU's select: CUDA has no bool x8)
    sch.reverse_compute_at(wb, cta_loop)
    loops = sch.get_loops(wb)
    depth = next(i for i, lp in enumerate(loops) if sch.get(lp).same_as(sch.get(cta_loop))) + 1
    s_l, m_l, n_l = loops[depth:]  # the block's axes' order
    bm, bn = (int(sch.get(lp).extent) for lp in (m_l, n_l))
    t_n = bn // vec  # a row's lanes, `vec` columns each, then t_m rows a warp
    if bn % vec or 32 % t_n or bm % (slices * warps * (32 // t_n)):
        raise ValueError(f"sliced K: a {bm}x{bn} tile does not split over {slices * warps} warps {vec} wide")
    t_m = 32 // t_n
    tz, ty, tm, rows = sch.split(m_l, [slices, warps, t_m, None])  # a thread's rows contiguous
    tn, lanes = sch.split(n_l, [t_n, vec])
    sch.reorder(tz, ty, tm, tn, rows, s_l, lanes)
    tx = sch.fuse(tm, tn)
    sch.unroll(rows)
    sch.unroll(s_l)
    sch.vectorize(lanes)
    if on_gpu:  # the slices are CTAs: cluster_sum.inject gives each its rows (blockIdx.z)
        sch.annotate(tz, CLUSTER_SUM, slices)
        sch.bind(ty, "threadIdx.y")
        sch.bind(tx, "threadIdx.x")
    # each thread's rows x `vec` sums stay registers; the epilogue computes and stores them `vec` wide
    sch.reverse_compute_at(epi, tx)
    sch.unroll(sch.get_loops(epi)[-2])
    sch.vectorize(sch.get_loops(epi)[-1])
    return vec


def _reads_its_own_element(block, sums) -> bool:
    """Whether `block`, iterating over (m, n), reads `sums` at exactly (m, n)."""
    analyzer = sym.Analyzer()
    for iv in block.iter_vars:
        analyzer.bind(iv.var, iv.dom)
    ivs = [iv.var for iv in block.iter_vars]
    regions = [r.region for r in block.reads if r.source.same_as(sums)]
    return bool(regions) and len(ivs) == 2 and all(
        len(region) == 2 and all(analyzer.can_prove_equal(rg.min, v) and analyzer.can_prove_equal(rg.extent, 1)
                                 for rg, v in zip(region, ivs)) for region in regions)


def _fuse_rows(shape):
    """(…, n) -> (m, n) for a buffer of `shape`: the leading axes fused row-major."""
    def to_mn(*v):
        m = v[0]
        for x, e in zip(v[1:-1], shape[1:-1]):
            m = m * e + x
        return (m, v[-1])

    return to_mn


__all__ = ["SLICED", "slice_reduction", "stage_sum"]
