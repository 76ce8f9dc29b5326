"""The CUDA flash-attention template without a GPU: the placeholder that replaces the op's middle
stages, the kernel a ViT-sized attention becomes (one device-function call per warp, mma.sync and
ldmatrix in its PTX, nothing spilled), which shapes it takes, its untuned config, and the device
function's steps. Numbers: tests/gpu/test_attention_gpu.py (every config against float64 numpy)."""
from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

import tefuse
from tefuse.codegen.lower import lower_group
from tefuse.codegen.ptx import compile_to_ptx, cuda_kernel_names
from tefuse.frontend.onnx import import_onnx
from tefuse.fusion import fuse_graph
from tefuse.ops.attention import BLOCKS, AttentionGeometry
from tefuse.schedules.cuda.attention_flash import PLACEHOLDER, FlashAttention, flash_placeholder
from tefuse.schedules.cuda.intrin.flash import device_source
from tefuse.target import make_target
from tefuse.tune.task import task_from_group
from tests import reference as R
from tests.schedules.cuda.test_attention import vit_mha

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
VIT = AttentionGeometry(12, 197, 197, 64, 64, 0.125)


@pytest.fixture(scope="module")
def vit_block():
    """ViT-B/16's attention block (batch 1) built fp16 for CUDA, attention fused by default."""
    return tefuse.build(import_onnx(vit_mha()), "cuda", precision="fp16")


def _op_group(shape=(2, 12, 197, 64)):
    q = np.zeros(shape, "float16")
    g, _ = R.build_op("attention", q, q, q, alpha=0.125)
    (group,) = fuse_graph(g)
    return group


def test_placeholder_takes_the_middle_stages_place():
    func = lower_group(_op_group()).func
    script = flash_placeholder(func).script()
    for gone in (BLOCKS.scores, BLOCKS.max, BLOCKS.sum, BLOCKS.probs):
        assert f'T.sblock("{gone}")' not in script and f"{gone} = " not in script
    for kept in (BLOCKS.q, BLOCKS.k, BLOCKS.v, BLOCKS.out):
        assert f'T.sblock("{kept}")' in script
    assert f'T.sblock("{BLOCKS.context}")' not in script and f'T.sblock("{PLACEHOLDER}")' in script
    # each context element reads its q row and every (padded) k and v row
    assert re.search(r"T\.reads\(attn_q\[v_i0, v_i1, v_i, 0:64\], attn_k\[v_i0, v_i1, 0:208, 0:64\], "
                     r"attn_v\[v_i0, v_i1, 0:208, v_j\]\)", script)
    assert "T.writes(attn_ctx[v_i0, v_i1, v_i, v_j])" in script


def test_vit_attention_is_one_flash_kernel(vit_block):
    (k,) = [k for k in vit_block.kernels if k.template == "flash_attention"]
    src = k.source("cuda")
    assert len(cuda_kernel_names(src)) == 1
    # the device function defined once and called once per warp; no scores buffer
    assert len(re.findall(r"\btefuse_flash_16x64_d64_k197of208_s64_x[0-9a-f]{16}\(", src)) == 2
    assert "attn_scores" not in src and "attn_probs" not in src
    assert len(vit_block.kernels) == 4  # input cast, in-projection, attention, out-projection


@needs_nvcc
def test_vit_flash_kernel_compiles_to_mma_sync_with_nothing_spilled(vit_block):
    (k,) = [k for k in vit_block.kernels if k.template == "flash_attention"]
    ptx = compile_to_ptx(k.source("cuda"), "sm_90")
    assert re.search(r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.f16\.f16\.f32", ptx)
    assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in ptx  # v, read as P V's B operand
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx  # q and k
    assert "ld.local" not in ptx and "st.local" not in ptx, "scores or accumulators spilled"


@pytest.mark.parametrize("geo,dtype,target,want", [
    (VIT, "float16", "cuda", True),
    (VIT, "float16", "cuda:sm_80", True),
    (VIT, "bfloat16", "cuda", False),  # the core packs fp16 probabilities
    (VIT, "float32", "cuda", False),
    (VIT, "float16", "cuda:sm_75", False),  # mma.sync m16n8k16: sm_80 and later
    (AttentionGeometry(1, 64, 5, 32, 16, 1.0), "float16", "cuda", True),  # one key tile
    (AttentionGeometry(1, 128, 128, 128, 64, 1.0), "float16", "cuda", True),
    (AttentionGeometry(1, 197, 197, 72, 64, 1.0), "float16", "cuda", False),  # head dim not x16
    (AttentionGeometry(1, 197, 197, 144, 64, 1.0), "float16", "cuda", False),  # past MAX_HEAD_DIM
    (AttentionGeometry(1, 512, 4096, 64, 64, 1.0), "float16", "cuda", False),  # k, v past shared memory
    (VIT, "float16", "llvm", False),
])
def test_which_attentions_the_flash_template_builds(geo, dtype, target, want):
    assert FlashAttention().supports(geo, dtype, make_target(target)) is want


@pytest.mark.parametrize("shape,warps", [((32, 12, 197, 64), 8), ((1, 12, 197, 64), 4), ((3, 50, 32), 4)])
def test_untuned_config(shape, warps):
    """8 warps a block where that still gives every SM (132 on the default target) a block."""
    task = task_from_group(_op_group(shape), make_target("cuda"))
    t = task.template("flash_attention")
    got = t.fallback(task.info, make_target("cuda"), task.space("flash_attention")).values
    assert got == {"warps": warps, "vec_out": 4, "keys": 64}


def test_steps_of_64_keys_then_16_for_the_rest():
    src = device_source(64, 64, 208, 197, 0.18, keys=64)
    assert "for (int kb = 0; kb < 3; ++kb)" in src and "const int key0 = kb * 64;" in src
    assert "for (int kb = 0; kb < 1; ++kb)" in src and "const int key0 = 192 + kb * 16;" in src
    assert "key < 197 ?" in src  # the padded keys get -inf
    whole = device_source(64, 64, 192, 192, 0.18, keys=64)
    assert "kb * 16" not in whole  # no tail
    with pytest.raises(ValueError, match="multiples of 16"):
        device_source(72, 64, 208, 197, 0.18)
    with pytest.raises(ValueError, match="steps of"):
        device_source(64, 64, 208, 197, 0.18, keys=48)


@pytest.mark.parametrize("d", [48, 64])
def test_the_shared_memory_estimate_pads_rows_as_tvm_does(d):
    """The q, k and v row strides the kernel passes the core are padded_row's (48 -> 72: a row
    16 past a multiple of 32 pads by 24, not 8), so supports' estimate counts what TVM allocates."""
    from tefuse.schedules.cuda.attention import PAD_HALF, padded_row

    q = np.zeros((1, 64, d), "float16")
    k = np.zeros((1, 40, d), "float16")
    g, _ = R.build_op("attention", q, k, k, alpha=0.1)
    (kern,) = tefuse.build(g, "cuda", precision="fp16").kernels
    assert kern.template == "flash_attention"
    call = re.search(r"tefuse_flash_\w+\((.*)\);", kern.source("cuda").split("__global__")[-1]).group(1)
    assert [int(x) for x in call.split(", ")[-4:-1]] == [padded_row(d, PAD_HALF)] * 3


def test_the_device_function_name_holds_the_scale():
    """The scale is baked into the body, so it is in the name: two kernels of one module that
    differ only in alpha get two functions, not one definition skipped."""
    from tefuse.schedules.cuda.intrin.flash import LOG2E, device_source, func_name

    a, b = (func_name(64, 64, 208, 197, alpha * LOG2E, 64) for alpha in (0.125, 0.25))
    assert a != b
    assert f"void {a}(" in device_source(64, 64, 208, 197, 0.125 * LOG2E, 64)


def _masked_group(bias_shape, shape=(2, 12, 128, 64)):
    q = np.zeros(shape, "float16")
    g, _ = R.build_op("attention", q, q, q, np.zeros(bias_shape, "float32"), alpha=0.125, clip=65504.0)
    (group,) = fuse_graph(g)
    return g, group


@pytest.mark.parametrize("bias_shape,row", [((2, 1, 128, 128), "v_i"), ((2, 1, 1, 128), "0")])
def test_the_placeholder_reads_the_bias_row_of_its_query_or_the_key_masks_one(bias_shape, row):
    _, group = _masked_group(bias_shape)
    script = flash_placeholder(lower_group(group).func).script()
    assert re.search(rf"attn_v\[v_i0, v_i1, 0:128, v_j\], attn_bias\[v_i0, v_i1, {row}, 0:128\]\)", script)


@pytest.mark.parametrize("bias_shape,rows,stride", [((2, 1, 128, 128), 16, "bs"), ((2, 1, 1, 128), 1, None)])
def test_a_masked_attention_is_one_flash_kernel_adding_its_bias_tile(bias_shape, rows, stride):
    """The bias is copied to shared memory with q, k and v and added to the scaled scores, clamped
    to the clip, floored at float32's lowest (a row of masked keys stays finite)."""
    g, _ = _masked_group(bias_shape)
    (kern,) = tefuse.build(g, "cuda", precision="fp16").kernels
    assert kern.template == "flash_attention"
    src = kern.source("cuda")
    assert re.search(rf"tefuse_flash_16x64_d64_k128of128_s64_x[0-9a-f]{{16}}_b{rows}c[0-9a-f]{{16}}\(", src)
    row = "((e >> 1) * 8 + group) * bs + " if stride else ""
    assert (f"fmaxf((fminf(fmaxf(s[t][e] * 0.125f + b[{row}key], -65504.0f), 65504.0f)) * 1.4426950408889634f, "
            "TEFUSE_LOWEST)") in src


def test_the_wmma_template_leaves_a_bias_to_the_flash_one():
    from tefuse.schedules.cuda.attention import TensorCoreAttention

    geo = AttentionGeometry(24, 128, 128, 64, 64, 0.125, bias_rows=128, clip=65504.0)
    assert FlashAttention().supports(geo, "float16", make_target("cuda"))
    assert not TensorCoreAttention().supports(geo, "float16", make_target("cuda"))


def test_the_shared_estimate_counts_the_bias_rows():
    from tefuse.schedules.cuda.attention_flash import shared_bytes

    plain = AttentionGeometry(24, 128, 128, 64, 64, 0.125)
    keys = AttentionGeometry(24, 128, 128, 64, 64, 0.125, bias_rows=1)
    rows = AttentionGeometry(24, 128, 128, 64, 64, 0.125, bias_rows=128)
    assert shared_bytes(keys, 8) - shared_bytes(plain, 8) == 4 * 136
    assert shared_bytes(rows, 8) - shared_bytes(plain, 8) == 4 * 128 * 136


@needs_nvcc
def test_a_masked_flash_kernel_compiles_with_nothing_spilled():
    g, _ = _masked_group((2, 1, 128, 128))
    (kern,) = tefuse.build(g, "cuda", precision="fp16").kernels
    ptx = compile_to_ptx(kern.source("cuda"), "sm_90")
    assert re.search(r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.f16\.f16\.f32", ptx)
    assert "ld.local" not in ptx and "st.local" not in ptx, "scores or accumulators spilled"


def test_swin_t_shifted_window_attention_is_one_flash_kernel_computing_its_bias_in_the_copy(rng):
    """Swin-T's first stage (49-token windows, 3 heads of 32): the relative-position bias and
    the windows' mask, added over the [batch, windows] view, are one bias the kernel computes
    as it copies it (a row each query: 49 of them)."""
    from tests.graph.test_attention import shifted_window_model

    model = shifted_window_model(rng, b=2, windows=4, h=3, n=49, d=32, relu=False)
    cg = tefuse.build(import_onnx(model), "cuda", precision="fp16")
    (kern,) = [k for k in cg.kernels if k.template == "flash_attention"]
    assert len(cg.kernels) == 1, [k.template for k in cg.kernels]
    assert {"expand", "add"} <= {n.op for n in kern.group.nodes}
    assert re.search(r"tefuse_flash_16x32_d32_k49of64_s64_x[0-9a-f]{16}_b16c0{16}\(", kern.source("cuda"))


def test_a_relu_prologue_is_copied_four_lanes_wide():
    """q, k, v computed by a ReLU in the copy: its select over 8 halves would be a bool vector
    TVM's CUDA codegen cannot print (the build failed); the copy takes 4 lanes instead."""
    b = tefuse.GraphBuilder()
    q, k, v = (b.relu(b.input(x, (8, 3, 49, 32), "float16")) for x in "qkv")
    s = b.matmul(q, b.transpose(k, axes=(0, 1, 3, 2)))
    g = b.build(b.matmul(b.softmax(s, axis=-1), v))
    (kern,) = tefuse.build(g, "cuda", precision="fp16").kernels
    assert kern.template == "flash_attention"
    src = kern.source("cuda")
    assert re.search(r"half4 \w+ = \*\(half4\*\)\(in_q_ptr", src)  # q read 4 halves at a time
    assert not re.search(r"half8|uint4 \w+ = \*\(uint4\*\)\(in_q_ptr", src)


def _merged_heads_quantized(shape=(2, 12, 128, 64)):
    """attention -> [B, L, H, D] -> heads merged [B, L, H*D] -> QuantizeLinear (int8): what a
    quantized transformer's output projection reads."""
    b = tefuse.GraphBuilder()
    q, k, v = (b.input(n, shape, "float16") for n in "qkv")
    a = b.op("attention", q, k, v, alpha=0.125)
    merged = b.reshape(b.transpose(a, axes=(0, 2, 1, 3)), shape=(shape[0], shape[2], shape[1] * shape[3]))
    return b.build(b.quantize_linear(merged, b.const(np.array(0.01, "f4")), b.const(np.array(0, "i1")),
                                     dtype="int8"))


def test_the_flash_kernel_writes_the_codes_of_its_merged_heads():
    """Merging the heads lays whole rows end to end (the same addresses), so the head merge and
    the QuantizeLinear after it are the flash kernel's epilogue: one kernel, int8 codes out, stored
    a vector at a time where its fp16 rows were."""
    (kern,) = tefuse.build(_merged_heads_quantized(), "cuda:sm_90", precision="fp16").kernels
    assert kern.template == "flash_attention"
    assert [n.op for n in kern.group.nodes] == ["attention", "transpose", "reshape", "quantize_linear"]
    assert [o.dtype for o in kern.group.outputs] == ["int8"]
    assert re.search(r"\*\(int\*\)\(out_\w+_ptr \+", kern.source("cuda"))


@needs_nvcc
def test_the_flash_kernel_with_its_codes_compiles_with_nothing_spilled():
    (kern,) = tefuse.build(_merged_heads_quantized(), "cuda:sm_90", precision="fp16").kernels
    ptx = compile_to_ptx(kern.source("cuda"), "sm_90")
    assert "cvt.rni" in ptx  # the quantize's rounding, half to even
    assert "ld.local" not in ptx and "st.local" not in ptx


def test_merged_heads_and_their_codes_compute_what_one_kernel_an_op_does():
    g = _merged_heads_quantized((1, 2, 16, 8))
    rng = np.random.default_rng(0)
    feeds = {n: rng.standard_normal((1, 2, 16, 8)).astype("float16") for n in "qkv"}
    fused = tefuse.build(g, "llvm")
    assert len(fused.kernels) == 1
    np.testing.assert_array_equal(fused.run(**feeds)[0], tefuse.build(g, "llvm", fuse=False).run(**feeds)[0])
