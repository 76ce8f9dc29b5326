"""The fused attention op on the H100's tensor cores (schedules/cuda/attention.py's wmma template,
attention_flash.py's flash one), every config of each space, against float64 numpy; and torch's
MultiheadAttention export at ViT-B/16's sizes, attention fused, against onnxruntime.

Deselected by default; run with  python -m pytest -m gpu tests/gpu/test_attention_gpu.py -q
"""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse.codegen.schedule import ScheduleChoice
from tefuse.driver import build_group
from tefuse.frontend.onnx import import_onnx
from tefuse.fusion import fuse_graph
from tefuse.runtime.executor import CompiledGraph
from tefuse.target import make_target
from tefuse.tune.task import task_from_group
from tests import reference as R
from tests.ops.test_attention import attention_ref

pytestmark = pytest.mark.gpu

TEMPLATE = "tensorcore_attention"
FLASH = "flash_attention"
CASES = [
    pytest.param((2, 12, 197, 64), (2, 12, 197, 64), (2, 12, 197, 64), 0.125, id="vit_heads"),
    pytest.param((3, 50, 32), (3, 77, 32), (3, 77, 48), 0.2, id="lq50_lk77_dv48"),
    pytest.param((1, 2, 16, 64), (1, 2, 40, 64), (1, 2, 40, 64), 0.09, id="lq16_lk40"),
    pytest.param((70, 64), (300, 64), (300, 16), 0.125, id="no_batch_lk300"),
]


# shapes only the flash template takes (the wmma one refuses a single key tile and head dims past 64)
FLASH_ONLY = [
    pytest.param((1, 2, 64, 32), (1, 2, 5, 32), (1, 2, 5, 16), 0.3, id="lk5_one_key_tile"),
    pytest.param((2, 128, 128), (2, 128, 128), (2, 128, 64), 0.088, id="head_dim_128_lq128"),
]
PEAKED = [pytest.param((1, 1, 40, 64), (1, 1, 40, 64), (1, 1, 40, 64), 8.0, id="peaked_alpha8")]


@pytest.mark.parametrize("template,qs,ks,vs,alpha", [
    *(pytest.param(t, *p.values, id=f"{t}-{p.id}") for t in (TEMPLATE, FLASH) for p in CASES + PEAKED),
    *(pytest.param(FLASH, *p.values, id=f"{FLASH}-{p.id}") for p in FLASH_ONLY)])
def test_every_config_matches_numpy(rng, qs, ks, vs, alpha, template):
    q, k, v = (rng.standard_normal(s).astype("float16") for s in (qs, ks, vs))
    g, feeds = R.build_op("attention", q, k, v, alpha=alpha)
    tgt = make_target("cuda")
    (group,) = fuse_graph(g)
    task = task_from_group(group, tgt)
    assert task.template(template).name == template
    space = task.space(template)
    want = attention_ref(q, k, v, alpha)
    for i in range(len(space)):
        cfg = space.get(i)
        kernel = build_group(group, tgt, choice=ScheduleChoice(task.template(template), cfg, "tuned"))
        (y,) = CompiledGraph(g, tgt, [kernel]).run(*feeds)
        R.assert_close(y, want, "float16", rtol=1e-2, atol=1e-2, what=f"{template} {qs} {cfg.values}")


BIASED = [
    pytest.param((2, 12, 128, 64), (2, 12, 128, 64), (2, 12, 128, 64), (2, 1, 1, 128), id="bert_key_mask"),
    pytest.param((2, 12, 128, 64), (2, 12, 128, 64), (2, 12, 128, 64), (2, 1, 128, 128), id="bert_mask_rows"),
    pytest.param((1, 2, 50, 32), (1, 2, 77, 32), (1, 2, 77, 16), (50, 77), id="rows_shared_lk77"),
]


@pytest.mark.parametrize("qs,ks,vs,bs", BIASED)
def test_every_flash_config_with_a_mask_matches_numpy(rng, qs, ks, vs, bs):
    """A mask as transformers writes it (0 or float32's lowest, the fp16 graph's clip at 65504):
    the last 7 keys masked, a causal triangle where the bias has rows, one row of the last batch
    entry wholly masked (uniform, as unfused); every config of the flash space."""
    q, k, v = (rng.standard_normal(s).astype("float16") for s in (qs, ks, vs))
    lowest = np.finfo(np.float32).min
    bias = (0.5 * rng.standard_normal(bs)).astype(np.float32)
    bias[..., -7:] = lowest
    if bs[-2] > 1:
        bias = np.where(np.tril(np.ones(bs[-2:], bool), k=bs[-1] - bs[-2]), bias, lowest).astype(np.float32)
        if len(bs) == 4:
            bias[-1, 0, 3, :] = lowest
    g, feeds = R.build_op("attention", q, k, v, bias, alpha=0.125, clip=65504.0)
    tgt = make_target("cuda")
    (group,) = fuse_graph(g)
    task = task_from_group(group, tgt)
    space = task.space(FLASH)
    want = attention_ref(q, k, v, 0.125, bias, clip=65504.0)
    for i in range(len(space)):
        cfg = space.get(i)
        kernel = build_group(group, tgt, choice=ScheduleChoice(task.template(FLASH), cfg, "tuned"))
        (y,) = CompiledGraph(g, tgt, [kernel]).run(*feeds)
        R.assert_close(y, want, "float16", rtol=1e-2, atol=1e-2, what=f"{FLASH} {qs} {bs} {cfg.values}")


def test_vit_sized_mha_export_matches_onnxruntime(rng, monkeypatch):
    """One ViT-B/16 attention block (197 tokens, 12 heads of 64) as torch.onnx exports it, fp16:
    the attention is one tensor-core kernel and the block agrees with onnxruntime's fp32."""
    ort = pytest.importorskip("onnxruntime")
    import tests.frontend.test_onnx_attention as mha

    for name, value in dict(B=2, L=197, H=12, D=64, E=768).items():
        monkeypatch.setattr(mha, name, value)
    model = mha.mha_block(rng)
    # the block's random weights (0.3 * N(0, 1)) make 768-wide rows large: inputs of 0.1 keep the
    # scores at a trained model's scale (fp16 rounding of peaked softmaxes is what else is tested)
    x = (0.1 * rng.standard_normal((2, 197, 768))).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    cg = tefuse.build(import_onnx(model), "cuda", precision="fp16")  # fused by default: the flash template
    assert [k.template for k in cg.kernels].count(FLASH) == 1
    got = cg.run(x)[0]
    assert np.abs(got - want).max() <= 1e-2 * np.abs(want).max()


@pytest.mark.parametrize("relu", [False, True])
def test_swin_t_sized_shifted_window_attention_matches_onnxruntime(rng, relu):
    """Swin-T's first-stage windows (49 tokens, 3 heads of 32), the relative-position bias and
    the windows' mask computed in the flash kernel's copy, fp16, against onnxruntime's fp32; with
    a ReLU over q, k and v the copies take it as a prologue (4-lane selects)."""
    ort = pytest.importorskip("onnxruntime")
    from tests.graph.test_attention import shifted_window_model

    model = shifted_window_model(rng, b=4, windows=16, h=3, n=49, d=32, relu=relu)
    feed = {x: rng.standard_normal((64, 3, 49, 32)).astype(np.float32) for x in "qkv"}
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feed)[0]
    cg = tefuse.build(import_onnx(model), "cuda", precision="fp16")
    assert [k.template for k in cg.kernels] == [FLASH]
    got = cg.run(**feed)[0]
    assert np.abs(got - want).max() <= 1e-2 * np.abs(want).max()


def test_the_flash_kernels_codes_of_its_merged_heads_match_numpy(rng):
    """attention -> heads merged -> QuantizeLinear, one flash kernel writing int8 codes: each code
    within one step of numpy's quantize of float64 attention (the kernel's float16 rounding of the
    value may land on the other side of a half), and most of them equal."""
    from tests.schedules.cuda.test_attention_flash import _merged_heads_quantized

    shape = (2, 12, 128, 64)
    g = _merged_heads_quantized(shape)
    cg = tefuse.build(g, "cuda", precision="fp16")
    (kern,) = cg.kernels
    assert kern.template == FLASH
    feeds = {n: rng.standard_normal(shape).astype(np.float16) for n in "qkv"}
    got = cg.run(**feeds)[0].astype(np.int32)
    att = attention_ref(*(feeds[n].astype(np.float64) for n in "qkv"), 0.125)
    merged = att.transpose(0, 2, 1, 3).reshape(shape[0], shape[2], shape[1] * shape[3])
    want = np.clip(np.rint(merged / np.float32(0.01)), -128, 127).astype(np.int32)
    assert np.abs(got - want).max() <= 1
    assert (got == want).mean() > 0.95
