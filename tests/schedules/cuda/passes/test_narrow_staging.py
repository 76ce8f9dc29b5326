"""Tensor-core kernels stage fp16/bf16 results in their own type
(schedules/cuda/passes/narrow_staging.py): the rewritten staging tile is 16-bit, the numbers do
not change by a bit (the same schedule run on llvm with and without the rewrite), the CUDA
kernels (wgmma and mma.sync) round as the fragments are stored, and a tile read in float32
(tf32's result) is left as it is."""
from __future__ import annotations

import re

import numpy as np
import pytest
import tvm
from tvm import s_tir, tirx
from tvm_ffi import structural_walk

import tefuse
from tefuse.codegen.lower import lower_group
from tefuse.plan.spec import parse_chain
from tefuse.schedules.cuda.passes.narrow_staging import narrow_staging
from tefuse.codegen.schedule import find_template
from tefuse.target import make_target

from tests.schedules.cuda.gemm.test_mma import CASES, TF32_CASES, _dense, _group, _rand


LLVM_TILE = ("global",)  # on llvm the template keeps its tiles in global buffers


def _tile_dtypes(func) -> dict:
    found = {}
    structural_walk(func.body, [(s_tir.SBlock, lambda b: found.update(
        {buf.name: str(buf.dtype) for buf in b.alloc_buffers if buf.scope() in LLVM_TILE}))])
    return found


def _scheduled_on_llvm(graph):
    """The template's untuned schedule with plain loops (what llvm can run), and its lowering."""
    lowered = lower_group(_group(graph))
    cuda = make_target("cuda")
    t = find_template(cuda, lowered.info.anchor_kind, info=lowered.info)[0]
    cfg = t.fallback(lowered.info, cuda, t.space(lowered.info, cuda))
    sch = s_tir.Schedule(lowered.func)
    t.apply(sch, lowered.info, cfg, make_target("llvm"))
    return sch.mod["main"], lowered


CASES_16 = {
    "conv_nhwc_residual": CASES["conv_nhwc_residual"],
    "conv_nchw_bn_relu": CASES["conv_nchw_bn_relu"],  # an M-fastest (NCHW) store
    "dense_bf16_197": lambda: _dense(197, 96, 72, "bfloat16"),
}


@pytest.mark.parametrize("case", sorted(CASES_16))
def test_a_16_bit_result_is_staged_in_its_type_with_the_same_numbers(case):
    graph = CASES_16[case]()
    group = _group(graph)
    func, lowered = _scheduled_on_llvm(graph)
    narrowed = narrow_staging(func, LLVM_TILE)
    staged = {n: d for n, d in _tile_dtypes(func).items() if d == "float32"}
    assert len(staged) == 1  # the accumulators' staging tile
    (name,) = staged
    out_dtype = str(group.outputs[0].dtype)
    assert _tile_dtypes(narrowed)[name] == out_dtype
    rng = np.random.default_rng(0)
    args = [_rand(p.shape, p.dtype, rng) * (0.2 if "weight" in p.name else 1) for p in lowered.params]
    for p, a in zip(lowered.params, args):
        if p.name.endswith("_var"):  # batch norm's variance
            a[...] = np.abs(a) + 0.5
    dev = tvm.cpu()
    results = []
    for f in (func, narrowed):
        lib = tvm.compile(tvm.IRModule({"main": f}), target=make_target("llvm"))
        outs = [tvm.runtime.empty(o.shape, o.dtype, dev) for o in group.outputs]
        lib["main"](*[tvm.runtime.tensor(a, dev) for a in args], *outs)
        results.append(outs[0].numpy().astype(np.float32))
    np.testing.assert_array_equal(results[1], results[0])  # rounding at the store is rounding at the load
    want = tefuse.build(graph, "llvm").run(**{p.name: a for p, a in zip(lowered.params, args)})[0].astype(np.float32)
    assert np.abs(results[1] - want).max() <= 1e-2 * np.abs(want).max()


@pytest.mark.parametrize("case", [TF32_CASES[0], "conv_nhwc_split_hwio"])
def test_a_float32_result_keeps_its_float32_staging(case):
    """tf32's result and a split-K conv's partial sums are float32: their staging tile is read as
    it is, and stays."""
    func, _ = _scheduled_on_llvm(CASES[case]())
    assert "float32" in _tile_dtypes(func).values()
    assert narrow_staging(func, LLVM_TILE).same_as(func)


def test_the_tensorized_store_casts_and_keeps_its_rows_padded():
    """On the CUDA schedule (the fragment store tensorized, the tile's rows padded by the
    block's buffer_dim_align): the store's view of the tile turns 16-bit with the tile, its
    values are cast, and the padding is 8 elements past a multiple of 64 (32 banks)."""
    from tefuse.schedules.cuda.gemm.template import apply_gemm

    lowered = lower_group(_group(_dense(256, 128, 128, "float16")))
    sch = s_tir.Schedule(lowered.func)
    cfg = dict(BM=128, BN=128, WM=16, WN=128, BK=64, stages=3, intrin="wgmma", vec_out=4, tensorize=True)
    apply_gemm(sch, lowered.info.stage("accumulator"), lowered.info.epilogue, cfg, make_target("cuda:sm_90a"))
    func = sch.mod["main"]
    narrowed = narrow_staging(func)
    assert not narrowed.same_as(func)
    aligns, views, casts = [], [], []

    def on_block(b):
        if b.annotations and "buffer_dim_align" in b.annotations:
            aligns.append([[int(x) for x in a] for a in b.annotations["buffer_dim_align"]])
        views.extend(str(mb.buffer.dtype) for mb in b.match_buffers if mb.buffer.scope() == "shared.dyn"
                     and str(mb.source.source.dtype) in ("float16", "float32") and mb.buffer.name == "C")

    structural_walk(narrowed.body, [(s_tir.SBlock, on_block)])
    structural_walk(narrowed.body, [(tirx.BufferStore, lambda n: casts.append(n) if n.buffer.name == "C" and
                                     isinstance(n.value, tirx.Cast) else None)])
    assert aligns == [[[0, 1, 64, 8]]]
    assert views and set(views) == {"float16"}
    assert casts


def test_a_tile_read_without_the_cast_is_left_alone():
    """One load of the staging tile outside a 16-bit cast (here: a float32 copy of it added to the
    epilogue) and the tile keeps float32: the rewrite would change that load's value."""
    func, _ = _scheduled_on_llvm(CASES["conv_nhwc_residual"]())
    (name,) = [n for n, d in _tile_dtypes(func).items() if d == "float32"]
    readers = []

    def on_block(b):
        for r in b.reads:
            if r.source.name == name and not b.writes[0].source.name == name:
                readers.append(b)

    structural_walk(func.body, [(s_tir.SBlock, on_block)])
    assert readers  # the epilogue, where the extra load goes
    # an extra float32 read: a Let over an uncast load of the tile in the epilogue's body
    from tvm_ffi import structural_mutate
    from tvm.ir.expr import TensorLoad

    def on_store(n, m):
        loads = []
        structural_walk(n.value, [(TensorLoad, lambda x: loads.append(x) if x.source.name == name else None)])
        if not loads:
            return m.default_mutate(n)
        return tirx.SeqStmt([tirx.Bind(tirx.Var("raw", "float32"), loads[0]), n])

    with_raw = func.with_body(structural_mutate(func.body, [(tirx.BufferStore, on_store)]))
    assert narrow_staging(with_raw, LLVM_TILE).same_as(with_raw)


@pytest.mark.parametrize("arch, intrin, dtype", [("sm_90a", "wgmma", "float16"), ("sm_80", "mma", "float16"),
                                                ("sm_90a", "wgmma", "bfloat16")])
def test_the_cuda_kernels_round_as_they_store_the_fragments(arch, intrin, dtype):
    """Through the build: the fragments' stores into the staging tile convert to half (bf16), the
    epilogue reads 16-bit vectors, and no float32 view of the tile is left; the kernel compiles."""
    graph = parse_chain("conv2d(k=64,r=1)+bias+relu", (2, 8, 8, 64), dtype, "NHWC")
    w = [i for i in graph.inputs if i.name.endswith("_weight")][0]  # a constant weight: B as [N, K], wgmma's
    graph = graph.with_constants({w.name: _rand(w.shape, dtype, np.random.default_rng(1))})
    cg = tefuse.build(graph, make_target(f"cuda:{arch}"), cache=None)
    src = cg.source("cuda")
    assert {"wgmma": "tefuse_wgmma_m64", "mma": "mma.sync"}[intrin] in src
    ctype = {"float16": "half", "bfloat16": "nv_bfloat16"}[dtype]
    if intrin == "wgmma":  # a thread's two adjacent columns rounded and stored as one 4-byte pair
        rounded = re.search(rf"= \*\(float2\*\)\(\w+_warp_ptr [^;]*;\s*(\w+)\.x = \({ctype}\)\(\w+\.x\);"
                            rf"\s*\1\.y = \({ctype}\)\(\w+\.y\);\s*\*\({ctype}2\*\)\(\(\({ctype}\*\)buf_dyn_shmem_ptr\)", src)
    else:
        rounded = re.search(rf"\] = \(\({ctype}\)(__shfl_sync\(__activemask\(\), )?\w*_warp(_ptr)?\[", src)
    float_view = re.search(r"\(\(float\*\)buf_dyn_shmem(_ptr)?\)\[", src)
    assert rounded is not None and float_view is None


def test_wmma_keeps_its_float32_staging():
    """wmma's store_matrix_sync writes the tile through a float32 access pointer: the tile stays
    float32 and the kernel compiles (narrowed, TVM refused the pointer's type)."""
    from tefuse.bench.forced_config import ForcedConfig

    cfg = {"tile": [64, 64, 32, 32], "stages": 3, "bk": 32, "intrin": "wmma", "vec_out": 4}
    cg = tefuse.build(_dense(197, 96, 72, "float16"), make_target("cuda:sm_80"), cache=None, db=ForcedConfig(cfg))
    src = cg.source("cuda")
    assert "wmma::store_matrix_sync" in src
    assert re.search(r"\(\(float\*\)buf_dyn_shmem(_ptr)?\)", src)
