"""The CUDA wmma attention template without a GPU: a ViT-sized attention (its head split and merge
included) is one kernel whose CUDA holds two wmma products and compiles to PTX with mma; which
shapes and dtypes it takes; where its probabilities live; when the op forms. On sm_80 and later
the flash template takes the op first (test_attention_flash.py), so it is set aside here. Numbers: tests/gpu/test_attention_gpu.py."""
from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

import tefuse
from tefuse.codegen.ptx import compile_to_ptx, cuda_kernel_names
from tefuse.frontend.onnx import import_onnx
from tefuse.ops.attention import AttentionGeometry
from tefuse.schedules import op_supported
from tefuse.schedules.cuda.attention import TensorCoreAttention, probs_static, shared_bytes
from tefuse.schedules.cuda.attention_flash import FlashAttention
from tefuse.target import make_target

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
VIT = AttentionGeometry(12, 197, 197, 64, 64, 0.125)


def vit_mha():
    """torch's MultiheadAttention export at ViT-B/16's sizes (batch 1), as ONNX."""
    import tests.frontend.test_onnx_attention as mha

    saved = {n: getattr(mha, n) for n in ("B", "L", "H", "D", "E")}
    try:
        for n, v in dict(B=1, L=197, H=12, D=64, E=768).items():
            setattr(mha, n, v)
        return mha.mha_block(np.random.default_rng(0))
    finally:
        for n, v in saved.items():
            setattr(mha, n, v)


@pytest.fixture(scope="module")
def vit_block():
    """vit_mha built fp16 for CUDA, attention fused by the wmma template."""
    model = vit_mha()
    with pytest.MonkeyPatch.context() as mp:  # the flash template set aside: it refuses everything
        mp.setattr(FlashAttention, "supports", lambda *a: False)
        mp.setattr(FlashAttention, "accepts", lambda *a: False)
        return tefuse.build(import_onnx(model), "cuda", precision="fp16", fuse_attention=True)


def test_vit_attention_is_one_tensor_core_kernel(vit_block):
    (k,) = [k for k in vit_block.kernels if k.template == "tensorcore_attention"]
    src = k.source("cuda")
    assert len(cuda_kernel_names(src)) == 1
    assert src.count("wmma::mma_sync") == 2  # scores and context products
    assert "__shfl_down_sync" in src  # row max and sum across a warp's lanes
    # the head split read in the tile loads: the kernel reads the in-projection's output
    assert len(vit_block.kernels) == 4  # input cast, in-projection, attention, out-projection


@needs_nvcc
def test_vit_attention_compiles_to_ptx_with_mma(vit_block):
    (k,) = [k for k in vit_block.kernels if k.template == "tensorcore_attention"]
    ptx = compile_to_ptx(k.source("cuda"), "sm_90")
    # the scores (k read column-major: k^T) and the context products, from shared-memory tiles
    assert re.search(r"wmma\.mma\.sync\.aligned\.row\.col\.m16n16k16\.f32\.f32", ptx)
    assert re.search(r"wmma\.mma\.sync\.aligned\.row\.row\.m16n16k16\.f32\.f32", ptx)
    assert re.search(r"wmma\.load\.a\.sync\.aligned\.row\.m16n16k16\.shared\.f16", ptx)


@pytest.mark.parametrize("geo,dtype,target,want", [
    (VIT, "float16", "cuda", True),
    (VIT, "bfloat16", "cuda", False),   # TVM registers fp16 wmma only
    (VIT, "float32", "cuda", False),    # CUDA cores: the unfused kernels
    (AttentionGeometry(1, 197, 16, 64, 64, 1.0), "float16", "cuda", False),   # one key tile
    (AttentionGeometry(1, 197, 197, 72, 64, 1.0), "float16", "cuda", False),  # head dim not x16
    (AttentionGeometry(1, 16, 40, 128, 128, 1.0), "float16", "cuda", False),  # head dim 128: wrong on the H100
    (AttentionGeometry(1, 512, 4096, 64, 64, 1.0), "float16", "cuda", False),  # keys past shared memory
    (VIT, "float16", "cuda:sm_86", False),  # 99 KB of shared memory: the bound is past it
    (AttentionGeometry(1, 128, 128, 64, 64, 1.0), "float16", "cuda:sm_86", True),
    (VIT, "float16", "rocm", False),    # no template of the gpu family
    (VIT, "float32", "llvm", True),     # the CPU's generic schedule builds anything
])
def test_which_attentions_the_wmma_template_builds(geo, dtype, target, want):
    if target == "rocm":
        try:  # make_target may need ROCm's device libraries
            tgt = make_target(target)
        except tefuse.errors.TefuseError as e:
            pytest.skip(str(e))
    else:
        tgt = make_target(target)
    if target.startswith("cuda"):
        assert TensorCoreAttention().supports(geo, dtype, tgt) is want
    else:  # no CUDA template: any template of the target's families
        assert op_supported(tgt, "attention", geo, dtype) is want


def test_probabilities_static_only_where_the_launch_opts_in():
    """ViT, 4 warps: the scores alone (54 KB) make the dynamic part pass 48 KB, so the probabilities
    go static (no barrier in their loop). 2 warps: dynamic may stay under 48 KB while the whole block
    does not, which TVM's launch would not opt into: the probabilities stay dynamic."""
    assert shared_bytes(VIT, 4) > 48 * 1024 and probs_static(VIT, 4)
    assert not probs_static(VIT, 2)
    small = AttentionGeometry(1, 50, 40, 32, 32, 1.0)
    assert shared_bytes(small, 4) <= 48 * 1024 and probs_static(small, 4)


def test_formed_by_default_only_where_the_flash_template_takes_it():
    """fp16 on sm_90: one flash kernel unasked; False keeps the three kernels. sm_75 has only the
    wmma template, which loses to the three kernels: formed only when asked. float32: never."""
    templates = lambda target, precision="fp16", **kw: [  # noqa: E731
        k.template for k in tefuse.build(import_onnx(vit_mha()), target, precision=precision, **kw).kernels]
    assert templates("cuda").count("flash_attention") == 1
    unfused = templates("cuda", fuse_attention=False)
    assert not {"flash_attention", "tensorcore_attention"} & set(unfused) and "cuda_cross_thread_reduction" in unfused
    assert not {"flash_attention", "tensorcore_attention"} & set(templates("cuda:sm_75"))
    assert not {"flash_attention", "tensorcore_attention"} & set(templates("cuda", precision="fp32"))
