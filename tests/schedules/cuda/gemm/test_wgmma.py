"""The Hopper tensor-core template, WgmmaGemm (intrin="wgmma", sm_90a), without a GPU: offered only
where it can run, its CUDA calls the wgmma device function and its PTX (nvcc here) holds
wgmma.mma_async; the same schedule untensorized on llvm (swizzled shared tiles included) computes
the right numbers; the swizzle and accumulator layouts are the ones the PTX ISA gives."""
from __future__ import annotations

import re

import numpy as np
import pytest
import tvm
from tvm import s_tir

import tefuse
from tefuse.codegen.compile import device_compile
from tefuse.codegen.lower import lower_group
from tefuse.codegen.ptx import compile_to_ptx
from tefuse.fusion import fuse_graph
from tefuse.graph import GraphBuilder
from tefuse.codegen.schedule import find_template
from tefuse.schedules.cuda.gemm.template import (WGMMA_ONLY_TILES, MmaGemm, WgmmaGemm, apply_gemm, b_rows_along_k,
                                                 pass_config)
from tefuse.schedules.cuda.gemm.tiles import pipeline_smem_bytes
from tefuse.target import device_caps, make_target

from .test_mma import _dense, _normalized_dense, _rand, _scores


def _lowered(graph):
    (group,) = fuse_graph(graph)
    return group, lower_group(group)


def _wgmma_cfg(bm, bn, stages=3, tensorize=True):
    return dict(BM=bm, BN=bn, WM=16, WN=bn, BK=64, stages=stages, intrin="wgmma", vec_out=4, tensorize=tensorize)


def _cuda_source(graph, bm, bn, arch="sm_90a", stages=3):
    _, low = _lowered(graph)
    target = make_target(f"cuda:{arch}")
    sch = s_tir.Schedule(low.func)
    apply_gemm(sch, low.info.stage("accumulator"), low.info.epilogue, _wgmma_cfg(bm, bn, stages), target)
    mod = device_compile(sch.mod, target, pass_config("wgmma", target))
    return mod.imports[0].inspect_source()


def test_offered_on_hopper_dense_and_the_fallback_for_a_dense_weight():
    """Compute capability 9.0 targets (sm_90, sm_90a) get the wgmma template; the untuned config of
    a dense (B stored [N, K]) is wgmma there, mma elsewhere; a float32 dense is no
    tensor-core GEMM at all."""
    _, low = _lowered(_dense(197, 96, 72, "float16"))
    for arch, wgmma in [("sm_90", True), ("sm_80", False), ("sm_90a", True), ("sm_100a", False)]:
        target = make_target(f"cuda:{arch}")
        first = find_template(target, "dense", info=low.info)[0]
        assert first.name == ("wgmma_gemm" if wgmma else "tensorcore_gemm"), arch
        assert WgmmaGemm().supports(low.info.geometry, low.info.dtype, target) == wgmma, arch
        cfg = first.fallback(low.info, target, first.space(low.info, target))
        assert cfg["intrin"] == ("wgmma" if wgmma else "mma"), arch
        assert str(first.compile_target(low.info, cfg, target).attrs["arch"]) == ("sm_90a" if wgmma else arch)
    _, low32 = _lowered(_dense(64, 64, 64, "float32"))  # float32 dense: not a tensor-core GEMM at all
    assert not MmaGemm().accepts(low32.info) and not WgmmaGemm().accepts(low32.info)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_the_space_rules_out_the_wgmma_configs_apply_refuses(dtype):
    """Tuners skip wgmma configs of the wrong depth (64 for fp16, 32 for tf32) instead of spending
    trials on them: the space's rule refuses exactly what apply_wgmma_gemm raises on."""
    graph = _dense(256, 128, 128, dtype)
    _, low = _lowered(_tf32(graph) if dtype == "float32" else graph)
    t = WgmmaGemm()
    target = make_target("cuda")
    space = t.space(low.info, target)
    fb = t.fallback(low.info, target, space).values
    for bk in (32, 64):
        cfg = space.from_values({**fb, "bk": bk})
        admitted = space.admits(cfg.index)
        assert admitted == (bk == (32 if dtype == "float32" else 64))
        sch = s_tir.Schedule(t.prepare(low.func, low.info, cfg, target))
        if admitted:
            t.apply(sch, low.info, cfg, target)
        else:
            with pytest.raises(ValueError, match="deep"):
                t.apply(sch, low.info, cfg, target)
    mma = MmaGemm().space(low.info, target)
    optin, elem = device_caps(target).smem_optin, 4 if dtype == "float32" else 2

    def fits(v):  # the pipeline's shared memory (test_mma.py checks the bytes against the build's)
        return pipeline_smem_bytes(v["tile"][0], v["tile"][1], v["bk"], v["stages"], elem,
                                   b_rows_along_k(low.info)) <= optin

    assert all(mma.admits(i) == (tuple(mma.get(i)["tile"]) not in WGMMA_ONLY_TILES and fits(mma.get(i).values))
               for i in range(len(mma)))
    assert all(kn.name != "slices" for kn in mma.knobs)  # cluster slices: wgmma only
    wgmma_192 = space.from_values({**fb, "bk": 32 if dtype == "float32" else 64, "tile": (192, 192, 64, 64)})
    assert space.admits(wgmma_192.index)


def test_the_space_refuses_blocks_past_hoppers_shared_memory():
    """Every block the space admits fits Hopper's 227 KB opt-in by the estimate (pipeline or the
    float32 staging tile beside one tile version, plus the merge's slack); 256x192 at 2 stages,
    which took 240 KB on the H200 and failed to launch, does not; 192x192 fits at 2 to 4 stages."""
    from tefuse.schedules.cuda.gemm.wgmma import HOPPER_SMEM_OPTIN, SMEM_MERGE_SLACK, wgmma_shared_bytes

    fits = lambda bm, bn, stages: wgmma_shared_bytes(bm, bn, stages) + SMEM_MERGE_SLACK <= HOPPER_SMEM_OPTIN
    assert not fits(256, 192, 2) and not fits(256, 192, 4)
    space = WgmmaGemm().space(_lowered(_dense(400, 256, 256, "float16"))[1].info, make_target("cuda"))
    admitted = [space.get(i) for i in range(len(space)) if space.admits(i) and space.get(i)["intrin"] == "wgmma"]
    assert admitted and all(fits(*c["tile"][:2], c["stages"]) for c in admitted)
    assert {c["stages"] for c in admitted if tuple(c["tile"][:2]) == (192, 192)} == {1, 2, 3, 4}


def test_fallback_tiles_follow_the_sm_count():
    """Two 128x128 blocks per SM or more: 128x128, 3 stages; one 128x128 block for 4/5 of the SMs
    or more, none with two: 128x128 too (a third less operand traffic than 64x128); else 64x128,
    4 stages; 64x64 where 64x128 would leave SMs idle, unless the reduction is deep and under 3/10
    of them idle; 128x192 where a deep 16-bit reduction makes one wave of nearly every SM; never
    more stages than the reduction's steps less one."""
    from tefuse.schedules.cuda.gemm.wgmma import fallback_values

    assert fallback_values(4096, 4096, 132)["tile"][:2] == (128, 128)
    assert fallback_values(6272, 256, 132)["tile"][:2] == (64, 128)
    assert fallback_values(197, 2304, 132)["stages"] == 4
    assert fallback_values(6272, 64, 132)["tile"][:2] == (64, 64)  # 64 channels: no half-padded tiles
    assert fallback_values(784, 128, 132)["tile"][:2] == (64, 64)  # 13 blocks of 64x128
    assert fallback_values(784, 1024, 132)["tile"][:2] == (64, 64)  # 104 blocks of 64x128
    assert fallback_values(3136, 256, 132, k=1024)["tile"][:2] == (64, 64)  # 98: the 14x14 1x1 convs at batch 16
    assert fallback_values(3136, 256, 132, k=2304)["tile"][:2] == (64, 128)  # the 3x3 one: a deep reduction
    assert fallback_values(784, 512, 132, k=2048)["tile"][:2] == (64, 64)  # 52 blocks of 64x128: too few
    # BERT-base at batch 32: the second MLP product one wave of 128x192 blocks, the first 128x128
    fc2 = fallback_values(4096, 768, 132, k=3072)
    assert (fc2["tile"], fc2["stages"]) == ((128, 192, 64, 64), 4)
    assert fallback_values(4096, 3072, 132, k=768)["tile"][:2] == (128, 128)
    assert fallback_values(6304, 768, 132, k=3072)["tile"][:2] == (192, 192)  # ViT-B/16's: one wave at 192x192
    assert fallback_values(4096, 768, 132, "int8", k=3072)["tile"][:2] == (64, 128)  # measured for 16-bit only
    assert fallback_values(784, 2048, 132)["tile"][:2] == (128, 128)  # 112 blocks (512x7x7->2048 at batch 16)
    assert fallback_values(3136, 1024, 132)["tile"][:2] == (64, 128)  # 200 of 128x128: two on some SMs
    assert fallback_values(12544, 128, 132)["tile"][:2] == (64, 128)  # 98 of 128x128 leave a quarter idle
    assert fallback_values(3136, 512, 132, k=256)["stages"] == 3  # 4 steps: 3 stages
    assert fallback_values(50176, 256, 132, k=64)["stages"] == 2  # 1 step
    assert fallback_values(3136, 512, 132, k=2304)["stages"] == 4
    assert fallback_values(4096, 4096, 132, k=4096)["stages"] == 3
    # 192x192 where it takes clearly fewer waves: ViT-B/16 b32's N = 768 and 2304 products, not
    # its N = 3072 one, nor a conv whose N = 128 would be a third padding
    assert fallback_values(6304, 768, 132, k=3072)["tile"][:2] == (192, 192)
    assert fallback_values(6304, 2304, 132)["tile"][:2] == (192, 192)
    assert fallback_values(6304, 3072, 132)["tile"][:2] == (128, 128)
    assert fallback_values(50176, 128, 132)["tile"][:2] == (128, 128)


def test_an_image_stem_keeps_its_pipeline():
    """A conv window over an image's channels (3, padded to 4, two pixels a 16-byte copy) keeps
    the untuned pipeline at any grid size: its tile copies are 16-byte cp.async, as a 3x3 conv
    over 64 channels and windows side by side have (an unpipelined stem, 1 stage, won only while
    each copy held one pixel; with pairs 3 stages took 43.6 us against 46.6)."""
    from tefuse.schedules.cuda.gemm.wgmma import fallback_values

    assert fallback_values(200704, 64, 132, k=224)["stages"] == 3
    assert fallback_values(12544, 64, 132, k=224)["stages"] == 3  # batch 1: 196 blocks
    rng = np.random.default_rng(0)
    srcs = {}
    for c, r, stride, hw in ((3, 7, 2, 256), (64, 3, 2, 256), (3, 4, 4, 512)):  # 512 blocks of 128x64 each
        b = GraphBuilder()
        w = b.const((rng.standard_normal((64, c, r, r)) / 24).astype("float32"))
        x = b.input("x", (4, c, hw, hw))
        y = b.conv2d(x, w, strides=stride, padding=r // 2 if stride < r else 0)
        (conv,) = [k for k in tefuse.build(b.build(b.relu(y)), "cuda", precision="fp16").kernels
                   if k.template == "wgmma_gemm"]
        srcs[c, r] = conv.source("cuda")
        assert "tefuse_wgmma_m64n64k16x4_f16" in srcs[c, r]
    assert re.search(r"ptx_cp_async\w*_16\w*\(buf_dyn_shmem_ptr, [^;]*in_x\w*pairs_ptr", srcs[3, 7])
    assert "cp_async" in srcs[64, 3]
    assert "cp_async" in srcs[3, 4]  # windows side by side (a patch embedding, a GEMM on patches)


def test_matmul_keeps_mma_untuned_on_hopper():
    """A matmul's B is stored [K, N], which this wgmma path does not read: its fallback stays mma."""
    b = GraphBuilder()
    x, w = b.input("x", (2, 64, 64), "float16"), b.input("w", (2, 64, 64), "float16")
    _, low = _lowered(b.build(b.matmul(x, w)))
    target = make_target("cuda")
    t = find_template(target, "dense", info=low.info)[0]
    assert t.fallback(low.info, target, t.space(low.info, target))["intrin"] == "mma"


def test_build_on_the_default_cuda_target_compiles_the_dense_for_sm_90a():
    """`tefuse.build(..., "cuda")` (sm_90, untuned): the fp16 dense + bias + ReLU kernel calls
    wgmma (64x64 tiles: 8 blocks of 64x128 would leave most SMs idle), and its source compiles
    (nvcc, sm_90a, as the kernel's own target) to wgmma.mma_async."""
    (k,) = tefuse.build(_dense(256, 256, 128, "float16"), "cuda").kernels
    src = k.source("cuda")
    assert "tefuse_wgmma_m64n64k16x4_f16" in src and "mma.sync" not in src
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n64k16\.f32\.f16\.f16", compile_to_ptx(src, "sm_90a"))


def test_build_on_the_default_cuda_target_runs_a_model_conv_on_wgmma():
    """An NCHW model's fp16 3x3 conv on `cuda` (sm_90): prepared as NHWC with its constant weight
    OHWI, untuned it calls wgmma and loads its padded input tile by predicated (zero-filling)
    cp.async."""
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x = b.input("x", (2, 64, 14, 14))
    w = b.const((rng.standard_normal((64, 64, 3, 3)) / 24).astype("float32"))
    cg = tefuse.build(b.build(b.relu(b.conv2d(b.relu(x), w, padding=1))), "cuda", precision="fp16")
    conv = [k for k in cg.kernels if "conv2d" in k.group.name]
    assert len(conv) == 1 and conv[0].group.anchor.attrs.get("weight_layout") == "OHWI"
    src = conv[0].source("cuda")
    assert "tefuse_wgmma_m64n64k16x4_f16" in src and "mma.sync" not in src  # 64 channels: 64-wide tiles
    assert "ptx_cp_async_legacy_pred_cg_16" in src  # the padding: a predicated 16-byte copy


def test_build_on_the_default_cuda_target_splits_a_small_grid_conv():
    """ResNet-50's batch-1 2048 -> 512 1x1 conv on `cuda` (sm_90, 132 SMs): four 64 x 128 tiles
    alone, so the build splits it into 8 channel slices on wgmma (PTX: wgmma.mma_async) and a
    second kernel that sums them with the bias and ReLU; split_k=False keeps one kernel."""
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x = b.input("x", (1, 7, 7, 2048), "float16")
    w = b.const((rng.standard_normal((1, 1, 2048, 512)) / 45).astype("float16"))
    graph = b.build(b.relu(b.bias_add(b.conv2d(x, w, layout="NHWC"), b.input("bias", (512,), "float16"), axis=3)))
    cg = tefuse.build(graph, "cuda")
    part, total = cg.kernels
    assert part.group.anchor.attrs["split_k"] == 8 and part.template == "wgmma_gemm"
    assert total.group.anchor.op == "split_sum" and [n.op for n in total.group.nodes] == ["split_sum", "bias_add", "relu"]
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n64k16\.f32\.f16\.f16",
                     compile_to_ptx(part.source("cuda"), "sm_90a"))
    (one,) = tefuse.build(graph, "cuda", split_k=False).kernels
    assert one.group.anchor.attrs.get("split_k") is None


def test_build_on_the_default_cuda_target_splits_vits_mlp_down_projection_at_batch_1():
    """ViT-B/16's fc2 at batch 1 (197 x 768 x 3072 + bias + residual, the weight read [N, K]):
    24 tiles alone, so 8 slices of 384 on wgmma and a sum kernel with the epilogue."""
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x, res = b.input("x", (1, 197, 3072), "float16"), b.input("res", (1, 197, 768), "float16")
    w = b.const((rng.standard_normal((768, 3072)) / 55).astype("float16"))
    y = b.matmul(x, w, trans_b=True)
    graph = b.build(b.add(b.add(y, b.input("bias", (768,), "float16")), res))
    part, total = tefuse.build(graph, "cuda").kernels
    assert part.group.anchor.attrs["split_k"] == 8 and "tefuse_wgmma_" in part.source("cuda")
    assert [n.op for n in total.group.nodes] == ["split_sum", "add", "add"]


@pytest.mark.parametrize("dtype,bm,bn", [("float16", 128, 128), ("bfloat16", 64, 96), ("float16", 192, 192)])
def test_cuda_calls_wgmma_and_ptx_holds_wgmma_mma_async(dtype, bm, bn):
    src = _cuda_source(_dense(197 if bm < 192 else 400, 96 if bn == 96 else 256, 136, dtype), bm, bn)
    t = {"float16": "f16", "bfloat16": "bf16"}[dtype]
    fn = f"tefuse_wgmma_m64n{bn}k16x4_{t}"
    assert re.search(fn + r"(_s\d+)?\(\(&\(\w+\[0\]\)\)", src), "the wgmma call does not take this lane's accumulators"
    assert "fence.proxy.async.shared::cta" in src and "cp.async" in src
    assert "ldmatrix" not in src and "mma.sync" not in src
    ptx = compile_to_ptx(src, "sm_90a")
    assert re.search(rf"wgmma\.mma_async\.sync\.aligned\.m64n{bn}k16\.f32\.{t}\.{t}\b", ptx)
    assert "wgmma.commit_group.sync.aligned" in ptx and "wgmma.wait_group.sync.aligned" in ptx
    assert "cp.async" in ptx
    assert "ld.local" not in ptx and "st.local" not in ptx, "accumulators spilled to local memory"


# a thread's two adjacent accumulator columns stored into the (float32) staging tile as one 8-byte
# vector (intrin/wgmma.py `_store_impl`), not as TVM's mma store writes them, element by element
PAIRED_STORE = r"\*\(float2\*\)\(\(\(float\*\)buf_dyn_shmem_ptr\) \+ [^;]*\) = \*\(float2\*\)\(\w+_warp_ptr"
SCALAR_STORE = r"\(\(float\*\)buf_dyn_shmem_ptr\)\[[^\]]*\] = \w+_warp"


@pytest.mark.parametrize("stages", [3, 4])
def test_a_pipelined_loop_keeps_one_wgmma_batch_in_flight(stages):
    """The product first in the k loop's body, its copies after: a step waits for the previous
    step's wgmma (wait_group 1) and a barrier before the copies overwrite those tiles, takes its
    own tiles from the oldest of the stages - 1 copy groups, and the accumulators are stored only
    after every batch is done (wait_group 0 first)."""
    src = _cuda_source(_dense(256, 256, 512, "float16"), 128, 128, stages=stages)
    fn = f"tefuse_wgmma_m64n128k16x4_f16_s{stages}"
    body = src[src.index(f"void {fn}("):]
    body = body[:body.index("\n}\n")]
    assert "wgmma.wait_group.sync.aligned 1;" in body and f"cp.async.wait_group {stages - 2};" in body
    assert body.rstrip().count("__syncthreads();") == 2
    kernel = src[src.index("main_kernel("):]
    call = kernel.index(f"{fn}(")  # the first product: in the k loop's body
    copy = r"ptx_cp_async\w*\(buf_dyn_shmem_ptr"
    assert not re.search(copy, kernel[kernel.rfind("for (int", 0, call):call]), "the copies come after the product"
    copies = kernel[call:kernel.index("commit_group", call)]
    # into the tiles the previous step read: `stages` versions, the copy `stages - 1` steps ahead
    assert re.search(rf"ptx_cp_async\w*\(buf_dyn_shmem_ptr, \(*(\w+) \+ {stages - 1}\) (%|&) ", copies)
    assert re.search(rf"\((\w+) (% {stages}|& {stages - 1})\) \* ", kernel[call:call + 200])
    first_store = re.search(PAIRED_STORE, kernel)
    assert first_store and "tefuse_wgmma_wait_all();" in kernel[:first_store.start()]
    ptx = compile_to_ptx(src, "sm_90a")
    assert "wgmma.wait_group.sync.aligned 1;" in ptx and "wgmma.wait_group.sync.aligned 0;" in ptx


@pytest.mark.parametrize("stages", [1, 2])
def test_one_or_two_stages_wait_for_each_batch(stages):
    """With one stage the next copy overwrites the tiles being read, and so with two once the
    copies follow the product (TVM's pipeline then keeps one tile version): no batch in flight."""
    src = _cuda_source(_dense(256, 256, 512, "float16"), 128, 128, stages=stages)
    assert "tefuse_wgmma_m64n128k16x4_f16(" in src and "_s1" not in src and "_s2" not in src
    # the accumulators stored as column pairs, with no batch to drain first
    assert re.search(PAIRED_STORE, src) and "tefuse_wgmma_wait_all();" not in src
    assert not re.search(SCALAR_STORE, src)
    assert "wgmma.wait_group.sync.aligned 1" not in src and "tefuse_wgmma_wait_all" not in src


def test_wgmma_rejects_b_stored_k_by_n():
    b = GraphBuilder()
    x, w = b.input("x", (2, 64, 64), "float16"), b.input("w", (2, 64, 64), "float16")
    _, low = _lowered(b.build(b.matmul(x, w)))
    sch = s_tir.Schedule(low.func)
    with pytest.raises(ValueError, match="B must be stored"):
        apply_gemm(sch, low.info.stage("accumulator"), low.info.epilogue, _wgmma_cfg(64, 64),
                      make_target("cuda:sm_90a"))


def _cast_dense(m, n, k):
    """A float32 activation cast to fp16 inside the GEMM's A load (a precision-converted model's
    first projection)."""
    b = GraphBuilder()
    x, w = b.input("x", (m, k), "float32"), b.input("w", (n, k), "float16")
    return b.build(b.dense(b.cast(x, dtype="float16"), w))


def _ohwi_conv(n, hw, c, k, r, stride=1, dtype="float16"):
    """An NHWC conv reading an OHWI weight (B stored [N, K], graph/weights.py) + bias + ReLU."""
    b = GraphBuilder()
    x, w = b.input("x", (n, hw, hw, c), dtype), b.input("w", (k, r, r, c), dtype)
    y = b.conv2d(x, w, strides=stride, padding=r // 2, layout="NHWC", weight_layout="OHWI")
    return b.build(b.relu(b.bias_add(y, b.input("bias", (k,), dtype), axis=3)))


def _split_conv(n, hw, c, k, r, splits, dtype="float16"):
    """The partial products of a split-K OHWI conv (graph/split_k.py): [S, N, OH, OW, K] float32."""
    b = GraphBuilder()
    x, w = b.input("x", (n, hw, hw, c), dtype), b.input("w", (k, r, r, c), dtype)
    return b.build(b.conv2d(x, w, padding=r // 2, layout="NHWC", weight_layout="OHWI", split_k=splits))


def _split_linear(rows, k, n, splits, dtype="float16"):
    """The partial products of a split-K Linear (graph/split_k.py): [S, 1, rows, N] float32."""
    b = GraphBuilder()
    x, w = b.input("x", (1, rows, k), dtype), b.input("w", (n, k), dtype)
    return b.build(b.matmul(x, w, trans_b=True, split_k=splits))


LLVM_CASES = {
    "conv_ohwi_3x3_padded": (lambda: _ohwi_conv(2, 7, 64, 96, 3), 64, 96, 3),
    "conv_ohwi_3x3_stride2": (lambda: _ohwi_conv(1, 9, 16, 64, 3, stride=2), 64, 64, 2),
    "conv_ohwi_1x1": (lambda: _ohwi_conv(2, 10, 72, 128, 1), 128, 128, 4),
    # split-K: the slices are a batch axis of the implicit GEMM, each reading its channels
    "conv_ohwi_split_3x3": (lambda: _split_conv(1, 7, 64, 96, 3, 4), 64, 96, 3),
    "conv_ohwi_split_1x1": (lambda: _split_conv(1, 6, 128, 64, 1, 2), 64, 64, 2),
    "linear_split": (lambda: _split_linear(70, 256, 96, 4), 64, 96, 3),
    "plain_197": (lambda: _dense(197, 96, 72, "float16"), 64, 96, 3),
    "plain_130": (lambda: _dense(130, 256, 200, "float16"), 128, 128, 3),
    # three warpgroups of rows, 192 columns (WGMMA_ONLY_TILES); M and N tails masked
    "plain_192x192": (lambda: _dense(400, 200, 136, "float16"), 192, 192, 3),
    "conv_ohwi_3x3_192x192": (lambda: _ohwi_conv(2, 9, 64, 200, 3), 192, 192, 3),
    "layernorm_prologue": (lambda: _normalized_dense(197, 64, 96, "float16"), 64, 64, 3),
    "layernorm_prologue_2_stages": (lambda: _normalized_dense(130, 96, 128, "float16"), 128, 96, 2),
    "layernorm_prologue_unpipelined": (lambda: _normalized_dense(70, 64, 64, "float16"), 64, 64, 1),
    "cast_prologue": (lambda: _cast_dense(100, 80, 72), 64, 80, 4),
    # attention's q @ k^T: B read [N, K] through the transpose (gemm/tiles.operand_k_major)
    "attention_scores": (lambda: _scores(70, 40, 64, "float16"), 64, 48, 3),
}


@pytest.mark.parametrize("case", sorted(LLVM_CASES))
def test_tiling_padding_and_swizzle_compute_the_right_numbers_on_llvm(case):
    """The wgmma schedule with plain loops (swizzled shared tiles, 16 x BN warp tiles, padded
    tails, a LayerNorm-like or cast prologue computed while the A tile loads) on llvm against the
    CPU template."""
    make, bm, bn, stages = LLVM_CASES[case]
    graph = make()
    group, low = _lowered(graph)
    sch = s_tir.Schedule(low.func)
    llvm = make_target("llvm")
    apply_gemm(sch, low.info.stage("accumulator"), low.info.epilogue,
                  _wgmma_cfg(bm, bn, stages=stages, tensorize=False), llvm)
    # both operand tiles are in the swizzled layout (atoms of 8 rows x 8 chunks x 8 elements)
    assert len(re.findall(r"alloc_buffer\(\(\d+, \d+, \d+, 8, 8, 8\), \"float16\"", sch.mod.script())) == 2
    feed, got = _run_on_llvm(sch, group, low)
    want = tefuse.build(graph, "llvm").run(**feed)[0].astype(np.float32)
    assert np.abs(got.astype(np.float32) - want).max() <= 1e-2 * np.abs(want).max()


def _run_on_llvm(sch, group, low):
    """The scheduled module run on llvm with random inputs (weights scaled down): (feed, output)."""
    lib = tvm.compile(sch.mod, target=make_target("llvm"))
    rng = np.random.default_rng(0)
    args = [_rand(p.shape, p.dtype, rng) * (0.2 if p.name == "w" else 1) for p in low.params]
    dev = tvm.cpu()
    outs = [tvm.runtime.empty(o.shape, o.dtype, dev) for o in group.outputs]
    lib["main"](*[tvm.runtime.tensor(a, dev) for a in args], *outs)
    return {p.name: a for p, a in zip(low.params, args)}, outs[0].numpy()


def test_swizzle_is_the_128_byte_swizzle_wgmma_reads():
    """Flattened, swizzle_dims puts element (r, k) of a [rows][64] 16-bit tile where wgmma's
    K-major 128-byte-swizzle layout has it (8-row atoms of 1024 bytes: SBO 1024, 16-byte chunk
    k // 8 at chunk (k // 8) ^ (r % 8) of row r's 128 bytes), for every row and k."""
    from tefuse.schedules.cuda.intrin.wgmma import swizzle_index_map

    rows = 128
    imap = tvm.tirx.IndexMap.from_func(swizzle_index_map(), ndim=3)
    shape = [int(x) for x in imap.map_shape([1, rows, 64])]
    assert shape == [1, 1, rows // 8, 8, 8, 8]
    strides = np.cumprod([1] + shape[::-1][:-1])[::-1]
    r, k = np.meshgrid(np.arange(rows), np.arange(64), indexing="ij")
    got = np.zeros_like(r)
    for rr in range(rows):
        for kk in range(64):
            idx = [int(v) for v in imap.map_indices([0, rr, kk])]
            got[rr, kk] = int(np.dot(idx, strides))
    want_bytes = (r // 8) * 1024 + (r % 8) * 128 + ((k // 8) ^ (r % 8)) * 16 + (k % 8) * 2
    np.testing.assert_array_equal(got * 2, want_bytes)


def test_accumulator_layout_is_wgmma_d_fragment():
    """TVM's 16x16 mma accumulator layout, fragments along N one after another, is the
    m64nNk16 D fragment of one warp (PTX ISA, wgmma .f32 accumulator: row 16 * warp + lane / 4
    + 8 * (i / 2 % 2), column 8 * (i / 4) + 2 * (lane % 4) + i % 2 for d[i])."""
    from tvm.s_tir.tensor_intrin.cuda import shared_16x16_to_ldmatrix_32x8_layout as lay

    n = 256
    for lane in range(32):
        for i in range(n // 2):
            row, col = lane // 4 + 8 * (i // 2 % 2), 8 * (i // 4) + 2 * (lane % 4) + i % 2
            t, e = lay(row, col % 16)
            assert (t, (col // 16) * 8 + e) == (lane, i)


def test_relu_epilogue_on_whole_tiles_builds_with_8_wide_stores_asked():
    """Whole tiles let the epilogue store ask for 8 lanes; a ReLU's select over them would be a
    boolx8 CUDA cannot declare (seen on the H100 for 4096^3), so the epilogue is computed 4 lanes
    at a time into registers and stored 8 wide (16 bytes) from there."""
    graph = _dense(256, 256, 128, "float16")
    _, low = _lowered(graph)
    target = make_target("cuda:sm_90a")
    sch = s_tir.Schedule(low.func)
    cfg = {**_wgmma_cfg(128, 128), "vec_out": 8}
    got = apply_gemm(sch, low.info.stage("accumulator"), low.info.epilogue, cfg, target)
    assert got["vec_out"] == 8
    src = device_compile(sch.mod, target, pass_config("wgmma", target)).imports[0].inspect_source()
    assert "wgmma" in src
    assert re.search(r"\*\(uint4\*\)\(out_\w*relu\w*_ptr \+", src)
    assert "boolx8" not in src and "ushort8" not in src


def _linear_3d(batch, rows, k, n, dtype="float16"):
    """A transformer projection as ONNX exports it: x[batch, rows, K] @ W.T[K, N] + bias."""
    rng = np.random.default_rng(3)
    b = GraphBuilder()
    x = b.input("x", (batch, rows, k), dtype)
    w = b.const((rng.standard_normal((k, n)) * 0.1).astype(dtype), name="w")
    bias = b.const(rng.standard_normal(n).astype(dtype), name="bias")
    return b.build(b.add(b.matmul(x, w), bias))


def test_a_projection_of_a_3d_activation_takes_wgmma_after_the_weight_pass():
    """The build's weight pass stores the constant [N, K], so the projection (all 2 x 197 rows as
    one GEMM's M) is a wgmma kernel on the default cuda target."""
    (k,) = tefuse.build(_linear_3d(2, 197, 64, 96), "cuda").kernels
    src = k.source("cuda")
    assert "tefuse_wgmma_m64n" in src
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k16\.f32\.f16\.f16", compile_to_ptx(src, "sm_90a"))


def test_wgmma_tiling_of_a_trans_b_matmul_computes_the_right_numbers_on_llvm():
    from tefuse.graph.weights import nk_gemm_weights

    graph = nk_gemm_weights(_linear_3d(2, 197, 72, 96), min_mn=16)
    group, low = _lowered(graph)
    assert low.info.geometry.b_nk and low.info.geometry.m == 2 * 197
    sch = s_tir.Schedule(low.func)
    llvm = make_target("llvm")
    apply_gemm(sch, low.info.stage("accumulator"), low.info.epilogue, _wgmma_cfg(64, 96, tensorize=False), llvm)
    lib = tvm.compile(sch.mod, target=llvm)
    x = _rand((2, 197, 72), "float16", np.random.default_rng(4))
    dev = tvm.cpu()
    feed = {"x": x, **{n.name: n.value for n in group.inputs if n.value is not None}}  # w_nk, bias
    outs = [tvm.runtime.empty(o.shape, o.dtype, dev) for o in group.outputs]
    lib["main"](*[tvm.runtime.tensor(np.asarray(feed[p.name]), dev) for p in low.params], *outs)
    want = tefuse.build(graph, "llvm").run(x=x)[0].astype(np.float32)
    got = outs[0].numpy().astype(np.float32)
    assert np.abs(got - want).max() <= 1e-2 * np.abs(want).max()



# ------------------------------------------------------------------ tf32 (float32 operands, k8)
def _tf32(graph):
    from tefuse.graph.precision import convert_precision

    return convert_precision(graph, "tf32")


ROUNDING = "4294959104"  # 0xFFFFE000: round_tf32's mask, in a kernel that still rounds


def test_tf32_offered_on_hopper_with_32_deep_tiles():
    """A tf32 dense (B [N, K]): the wgmma template first on sm_90, mma.sync (its only tf32
    instruction) after it; the untuned config is wgmma with BK = 32 (one 128-byte row of
    float32). sm_80 keeps mma alone."""
    _, low = _lowered(_tf32(_dense(197, 96, 72, "float32")))
    for arch, want in [("sm_90", ["wgmma_gemm", "tensorcore_gemm"]), ("sm_80", ["tensorcore_gemm"])]:
        target = make_target(f"cuda:{arch}")
        tunable = [t for t in find_template(target, "dense", info=low.info)
                   if t.supports(low.info.geometry, low.info.dtype, target) and t.name in want]
        assert [t.name for t in tunable] == want, arch
        assert [kn.candidates for kn in tunable[-1].space(low.info, target).knobs if kn.name == "intrin"] == [["mma"]]
        first = tunable[0]
        cfg = first.fallback(low.info, target, first.space(low.info, target))
        assert cfg["intrin"] == ("wgmma" if arch == "sm_90" else "mma") and (cfg["bk"] == 32 or arch == "sm_80"), arch


def test_tf32_wgmma_streams_raw_operands_and_ptx_holds_k8_tf32():
    """The built tf32 kernel on sm_90: wgmma m64nNk8 .tf32 in its PTX (nvcc, sm_90a), operands
    by cp.async with no TF32 rounding in the copies, the tiles rounded in shared memory
    (cvt.rna) before wgmma reads them; a BK = 64 config is refused by name."""
    graph = _tf32(_dense(256, 128, 136, "float32"))
    (k,) = tefuse.build(graph, "cuda").kernels
    src = k.source("cuda")
    assert "tefuse_wgmma_m64n64k8x4_tf32" in src and "mma.sync" not in src
    assert "cp.async" in src and ROUNDING not in src
    ptx = compile_to_ptx(src, "sm_90a")
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n64k8\.f32\.tf32\.tf32\b", ptx)
    assert "cvt.rna.tf32.f32" in ptx and ptx.index("cvt.rna.tf32.f32") < ptx.index("wgmma.mma_async")
    assert "ld.local" not in ptx and "st.local" not in ptx, "accumulators spilled to local memory"
    _, low = _lowered(graph)
    with pytest.raises(ValueError, match="float32 tiles are 32 deep"):
        apply_gemm(s_tir.Schedule(low.func), low.info.stage("accumulator"), low.info.epilogue,
                      _wgmma_cfg(64, 128), make_target("cuda:sm_90a"))


def test_tf32_rounding_is_taken_out_only_for_wgmma():
    """The template's prepare: a wgmma config gets the func without round_tf32 (the copies are
    plain loads), an mma config the func as lowered."""
    _, low = _lowered(_tf32(_dense(64, 64, 64, "float32")))
    t, m = WgmmaGemm(), MmaGemm()
    target = make_target("cuda")
    space = t.space(low.info, target)
    assert ROUNDING in low.func.script()
    wg = t.prepare(low.func, low.info, space.from_values({**t.fallback(low.info, target, space).values}), target)
    assert ROUNDING not in wg.script()
    mma = m.space(low.info, target).from_values({**t.fallback(low.info, target, space).values, "intrin": "mma"})
    assert m.prepare(low.func, low.info, mma, target).same_as(low.func)


TF32_LLVM_CASES = {
    "dense_197": (lambda: _dense(197, 96, 72, "float32"), 64, 96, 3),
    "conv_ohwi_3x3_padded": (lambda: _ohwi_conv(2, 7, 64, 96, 3, dtype="float32"), 64, 96, 3),
    "conv_ohwi_c4_7x7_stride2": (lambda: _ohwi_conv(1, 15, 4, 64, 7, stride=2, dtype="float32"), 64, 64, 2),
}


@pytest.mark.parametrize("case", sorted(TF32_LLVM_CASES))
def test_tf32_tiling_padding_and_swizzle_compute_the_right_numbers_on_llvm(case):
    """The tf32 wgmma schedule, plain loops on llvm (float32 tiles swizzled in 4-element chunks,
    the copies' rounding taken out by the template as on the GPU, where the wgmma device function
    rounds the tiles instead): the float32 products, within what TF32 allows of the tf32 build,
    and within float32 summation order of the plain float32 one."""
    make, bm, bn, stages = TF32_LLVM_CASES[case]
    graph = _tf32(make())
    group, low = _lowered(graph)
    t = WgmmaGemm()
    llvm = make_target("llvm")
    space = t.space(low.info, make_target("cuda"))
    cfg = space.from_values({**t.fallback(low.info, make_target("cuda"), space).values})
    sch = s_tir.Schedule(t.prepare(low.func, low.info, cfg, llvm))
    apply_gemm(sch, low.info.stage("accumulator"), low.info.epilogue,
                  {**_wgmma_cfg(bm, bn, stages=stages, tensorize=False), "BK": 32}, llvm)
    assert len(re.findall(r"alloc_buffer\(\(1, \d+, \d+, 8, 8, 4\)\)", sch.mod.script())) == 2
    feed, got = _run_on_llvm(sch, group, low)
    want = tefuse.build(graph, "llvm").run(**feed)[0]
    assert np.abs(got - want).max() <= 4e-3 * np.abs(want).max()
    exact = tefuse.build(make(), "llvm").run(**feed)[0]
    assert np.abs(got - exact).max() <= 1e-5 * np.abs(exact).max(), "the rounding was not taken out"


def test_tf32_swizzle_is_the_128_byte_swizzle_in_4_byte_elements():
    """float32 tiles: a row is 32 elements (128 bytes), chunk k // 4 stored at (k // 4) ^ (r % 8)."""
    from tefuse.schedules.cuda.intrin.wgmma import swizzle_index_map

    rows = 64
    imap = tvm.tirx.IndexMap.from_func(swizzle_index_map("float32"), ndim=3)
    shape = [int(x) for x in imap.map_shape([1, rows, 32])]
    assert shape == [1, 1, rows // 8, 8, 8, 4]
    strides = np.cumprod([1] + shape[::-1][:-1])[::-1]
    got = np.array([[int(np.dot([int(v) for v in imap.map_indices([0, r, k])], strides)) for k in range(32)]
                    for r in range(rows)])
    r, k = np.meshgrid(np.arange(rows), np.arange(32), indexing="ij")
    want_bytes = (r // 8) * 1024 + (r % 8) * 128 + ((k // 4) ^ (r % 8)) * 16 + (k % 4) * 4
    np.testing.assert_array_equal(got * 4, want_bytes)


@pytest.mark.parametrize("epilogue", ["cast_leaky_relu", "fp_encode", "where"])
def test_tf32_wgmma_keeps_the_other_selects_of_its_kernel(epilogue):
    """Taking the rounding out touches float32 round_tf32 selects only: a GEMM whose epilogue has
    selects of other types (a float16 leaky ReLU, an 8-bit encoding, an int32 where) builds on
    wgmma (it failed with "Reinterpret requires size match" when every select was tried)."""
    rng = np.random.default_rng(7)
    b = GraphBuilder()
    x = b.input("x", (96, 64), "float32")
    y = b.matmul(x, b.const((rng.standard_normal((64, 80)) * 0.1).astype("float32"), name="w"))
    if epilogue == "cast_leaky_relu":
        out = b.leaky_relu(b.cast(y, dtype="float16"), alpha=0.1)
    elif epilogue == "fp_encode":
        out = b.fp_encode(y)
    else:
        out = b.where(b.greater(y, b.const(np.zeros((1,), "float32"))), b.cast(y, dtype="int32"),
                      b.const(np.full((1,), -1, "int32")))
    graph = _tf32(b.build(out))
    (k,) = [kk for kk in tefuse.build(graph, "cuda").kernels if kk.group.anchor is not None]
    src = k.source("cuda")
    assert re.search(r"tefuse_wgmma_m64n\d+k8x4_tf32(_s\d+)?\(", src) and ROUNDING not in src


def test_the_7x7_stem_copies_its_input_tiles_with_cp_async():
    """ResNet's stem after the weight pass (4 channels, pixels read in pairs: 7x4 taps of 8
    channels, graph/weights.pair_pixels), on a grid small enough to keep its pipeline (a large one
    loads unpipelined, test_an_image_stem_loads_its_taps_unpipelined): each 16-byte chunk of the A
    tile is one pair tap, its padding test the same for all 8 lanes, so the copy is one predicated
    cp.async a chunk, not a loop of 2-byte loads and shared stores; its reduction 4 steps deep."""
    rng = np.random.default_rng(4)
    b = GraphBuilder()
    x = b.input("x", (2, 64, 64, 3), "float16")
    w = b.const((rng.standard_normal((7, 7, 3, 64)) * 0.1).astype("float16"), name="w")
    g = b.build(b.relu(b.conv2d(x, w, strides=2, padding=3, layout="NHWC")))
    conv = [k for k in tefuse.build(g, "cuda:sm_90", split_k=False).kernels if k.template == "wgmma_gemm"]
    (k,) = conv
    src = k.source("cuda")
    assert re.search(r"ptx_cp_async\w*pred\w*_16\w*\(buf_dyn_shmem_ptr, [^;]*in_x_c4_pairs_ptr", src)
    assert k.group.anchor.inputs[1].shape == (64, 7, 4, 8)  # K = 224: 4 steps of 64
    assert not re.search(r"\w+_s(_\d+)? = 0", src), "a copy or store loop was scalarized"
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n64k16\.f32\.f16\.f16", compile_to_ptx(src, "sm_90a"))
