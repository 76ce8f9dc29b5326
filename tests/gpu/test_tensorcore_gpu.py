"""The tensor-core templates (MmaGemm, WgmmaGemm) on a real GPU: fp16/bf16 convs, awkward GEMMs and batched matmuls
(fallback and every tile/stage/intrinsic variant of one shape) against the same graph on llvm,
whose fp16/bf16 inputs are accumulated in float32 as on the tensor cores.

    python -m pytest -m gpu tests/gpu/test_tensorcore_gpu.py -q
"""
from __future__ import annotations

import numpy as np
import pytest
import tvm

import tefuse
from tefuse.codegen.lower import lower_group
from tefuse.codegen.schedule import ScheduleChoice
from tefuse.driver import build_group
from tefuse.fusion import fuse_graph
from tefuse.runtime.executor import CompiledGraph
from tefuse.schedules.cuda.gemm.template import MmaGemm, WgmmaGemm, mma_fallback_values, tc_shape
from tefuse.target import device_caps, make_target
from tests.schedules.cuda.gemm.test_mma import CASES, NAME, TENSOR_CORE, TF32_CASES, _rand
from tefuse.graph.precision import convert_precision
from tefuse.plan.spec import parse_chain

pytestmark = pytest.mark.gpu

GPU_CASES = dict(CASES)
GPU_CASES.update({
    "resnet_3x3_b16": lambda: parse_chain("conv2d(k=128,r=3,pad=1)+bias+batch_norm+relu", (16, 128, 28, 28),
                                          "float16", "NCHW"),
    "resnet_1x1_7x7_b1": lambda: parse_chain("conv2d(k=2048,r=1)+bias+add+relu", (1, 512, 7, 7), "float16", "NCHW"),
    "conv_bf16_nhwc": lambda: parse_chain("conv2d(k=64,r=3,pad=1)+bias+relu", (4, 14, 14, 32), "bfloat16", "NHWC"),
    "resnet_3x3_b16_nhwc_tf32": lambda: convert_precision(parse_chain(
        "conv2d(k=128,r=3,pad=1)+bias+batch_norm+relu", (16, 28, 28, 128), "float32", "NHWC"), "tf32"),
})


def _inputs(graph, rng):
    vals = {}
    for i in graph.inputs:
        a = _rand(i.shape, i.dtype, rng)
        if i.name.endswith("_var"):
            a = (np.abs(a.astype(np.float32)) + 0.5).astype(a.dtype)
        if i.name.endswith("_weight") or i.name == "w":
            a = (a.astype(np.float32) * 0.1).astype(a.dtype)
        vals[i.name] = a
    return vals


def _check(cg, graph, vals):
    got = cg.run(**vals)[0].astype(np.float32)
    want = tefuse.build(graph, "llvm").run(**vals)[0].astype(np.float32)
    scale = np.abs(want).max()
    assert np.isfinite(got).all()
    assert np.abs(got - want).max() <= 1e-2 * scale, np.abs(got - want).max() / scale


@pytest.mark.parametrize("case", sorted(GPU_CASES))
def test_fallback_matches_llvm(case, rng):
    graph = GPU_CASES[case]()
    # every prologue in the one kernel, also a computed one that Hopper's rule would split off
    cg = tefuse.build(graph, "cuda", prologue=lambda candidate: True)
    assert len(cg.kernels) == 1 and cg.kernels[0].template in TENSOR_CORE
    _check(cg, graph, _inputs(graph, rng))


def _variants(info, target):
    """(template, config) pairs one knob at a time away from the untuned mma config and, where
    Hopper's wgmma template takes the group (a dense, an OHWI conv), away from its untuned config."""
    templates = [t for t in (MmaGemm(), WgmmaGemm())
                 if t.accepts(info) and t.supports(info.geometry, info.dtype, target)]
    m, n, _ = tc_shape(info)
    seen = []
    for t in templates:
        space = t.space(info, target)
        base = ({**mma_fallback_values(m, n, device_caps(target).sm_count), "intrin": "mma"}
                if t.name == NAME else t.fallback(info, target, space).values)
        for knob in space.knobs:
            for v in knob.candidates:
                cfg = {**base, knob.name: v}
                if (t, cfg) not in seen and space.admits(space.index_of(space.completed(cfg))):
                    seen.append((t, cfg))
    return seen


@pytest.mark.parametrize("case", ["dense_awkward_197", "conv_nchw_bn_relu", "dense_normalized_prologue",
                                  "dense_awkward_197_tf32"])
def test_every_knob_value_computes_the_same(case, rng):
    graph = GPU_CASES[case]()
    (group,) = fuse_graph(graph)
    target = make_target("cuda")
    info = lower_group(group).info
    variants = _variants(info, target)
    vals = _inputs(graph, rng)
    assert len(variants) > 5
    wrong = []
    for t, values in variants:
        kernel = build_group(group, target, choice=ScheduleChoice(t, t.space(info, target).from_values(values), "test"))
        try:
            _check(CompiledGraph(graph, target, [kernel]), graph, vals)
        except AssertionError as e:
            wrong.append(f"{t.name} {values}: {str(e).splitlines()[0]}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("case", [*TF32_CASES, "resnet_3x3_b16_nhwc_tf32"])
def test_tf32_matches_llvm_up_to_summation_order(case, rng):
    """Both sides multiply the same TF32-rounded operands exactly (the tensor cores on the GPU,
    mma.sync's fragments or wgmma's tiles rounded in shared memory; float32 on llvm); what is
    left is float32 summation order."""
    graph = GPU_CASES[case]()
    # every prologue in the one kernel, also a computed one that Hopper's rule would split off
    cg = tefuse.build(graph, "cuda", prologue=lambda candidate: True)
    assert len(cg.kernels) == 1 and cg.kernels[0].template in TENSOR_CORE
    vals = _inputs(graph, rng)
    got = cg.run(**vals)[0]
    want = tefuse.build(graph, "llvm").run(**vals)[0]
    scale = np.abs(want).max()
    assert np.abs(got - want).max() <= 2e-5 * scale, np.abs(got - want).max() / scale


@pytest.mark.parametrize("precision", ["fp16", "tf32"])
@pytest.mark.parametrize("c,k,r,stride", [(64, 64, 3, 1), (3, 64, 7, 2), (256, 128, 1, 1)])
def test_model_conv_on_wgmma_matches_llvm(c, k, r, stride, precision, rng):
    """An NCHW model's conv + ReLU in fp16 or tf32 on the H100: NHWC with its constant weight OHWI
    (an image's 3 channels padded to 4), untuned on wgmma, against the float32
    llvm build."""
    b = tefuse.GraphBuilder()
    x = b.input("x", (4, c, 28, 28))
    w = b.const((rng.standard_normal((k, c, r, r)) / np.sqrt(c * r * r)).astype("float32"))
    graph = b.build(b.relu(b.conv2d(x, w, strides=stride, padding=r // 2)))
    cg = tefuse.build(graph, "cuda", precision=precision)
    (conv,) = [kk for kk in cg.kernels if kk.group.anchor is not None]
    assert conv.group.anchor.attrs.get("weight_layout") == "OHWI" and "tefuse_wgmma_" in conv.source("cuda")
    if r == 7:  # fp16: the stem's pixels read in pairs, 4 taps of 8 channels (graph/weights.pair_pixels);
        # tf32: its kernel rows widened to 8 taps of 4 channels (row_taps)
        assert conv.group.anchor.inputs[1].shape[2:] == ((4, 8) if precision == "fp16" else (8, 4))
    xv = rng.standard_normal((4, c, 28, 28)).astype("float32")
    got = cg.run(x=xv)[0]
    want = tefuse.build(graph, "llvm").run(x=xv)[0]
    assert np.abs(got - want).max() <= (1e-2 if precision == "fp16" else 2e-3) * np.abs(want).max()
    if precision == "tf32":  # the same TF32-rounded operands as llvm's tf32 build: summation order only
        exact = tefuse.build(graph, "llvm", precision="tf32").run(x=xv)[0]
        assert np.abs(got - exact).max() <= 2e-5 * np.abs(exact).max()


@pytest.mark.parametrize("precision", ["fp16", "bf16", "tf32"])
@pytest.mark.parametrize("c,k,r,hw", [(512, 512, 3, 7), (1024, 256, 1, 14)])
def test_split_k_conv_matches_llvm(c, k, r, hw, precision, rng):
    """ResNet-50's small-grid convs at batch 1 on the H100: split into channel slices on wgmma
    (graph/split_k.py) and summed by a second kernel with the ReLU, against llvm's build in the
    same precision (unsplit: summation order, and fp16/bf16's rounding of the sum)."""
    b = tefuse.GraphBuilder()
    x = b.input("x", (1, c, hw, hw))
    w = b.const((rng.standard_normal((k, c, r, r)) / np.sqrt(c * r * r)).astype("float32"))
    graph = b.build(b.relu(b.conv2d(x, w, padding=r // 2)))
    cg = tefuse.build(graph, "cuda", precision=precision)
    (part,) = [kk for kk in cg.kernels if kk.group.anchor is not None and kk.group.anchor.op == "conv2d"]
    assert part.group.anchor.attrs.get("split_k", 1) > 1 and "tefuse_wgmma_" in part.source("cuda")
    xv = rng.standard_normal((1, c, hw, hw)).astype("float32")
    got = cg.run(x=xv)[0]
    want = tefuse.build(graph, "llvm", precision=precision).run(x=xv)[0]
    assert np.abs(got - want).max() <= (2e-5 if precision == "tf32" else 1e-2) * np.abs(want).max()


@pytest.mark.parametrize("precision", ["fp16", "tf32"])
def test_split_k_linear_matches_llvm(precision, rng):
    """ViT-B/16's MLP down-projection at batch 1 (a float32 Linear over [1, 197, 3072], weight
    transposed once to [N, K]) split into 8 slices on wgmma on the H100, against llvm's build in
    the same precision."""
    b = tefuse.GraphBuilder()
    x = b.input("x", (1, 197, 3072))
    w = b.const((rng.standard_normal((3072, 768)) / 55).astype("float32"))
    graph = b.build(b.add(b.matmul(x, w), b.const(rng.standard_normal(768).astype("float32"))))
    cg = tefuse.build(graph, "cuda", precision=precision)
    (part,) = [kk for kk in cg.kernels if kk.group.anchor is not None and kk.group.anchor.op == "matmul"]
    assert part.group.anchor.attrs.get("split_k", 1) == 8 and "tefuse_wgmma_" in part.source("cuda")
    xv = rng.standard_normal((1, 197, 3072)).astype("float32")
    got = cg.run(x=xv)[0]
    want = tefuse.build(graph, "llvm", precision=precision).run(x=xv)[0]
    assert np.abs(got - want).max() <= (2e-5 if precision == "tf32" else 1e-2) * np.abs(want).max()


def test_a_conv_untuned_at_192x192_matches_llvm(rng):
    """A conv whose untuned wgmma block is 192x192 (768 channels over 8x28x28 positions: 132 such
    blocks, one wave, where 128x128 takes two; gemm/wgmma._fewer_waves_at_192), fp16, NHWC,
    against the float32 llvm build."""
    b = tefuse.GraphBuilder()
    x = b.input("x", (8, 64, 28, 28))
    w = b.const((rng.standard_normal((768, 64, 3, 3)) / 24).astype("float32"))
    graph = b.build(b.relu(b.conv2d(x, w, padding=1)))
    cg = tefuse.build(graph, "cuda", precision="fp16")
    (conv,) = [kk for kk in cg.kernels if kk.group.anchor is not None]
    assert "tefuse_wgmma_m64n192k16x4_f16" in conv.source("cuda")
    xv = rng.standard_normal((8, 64, 28, 28)).astype("float32")
    got = cg.run(x=xv)[0]
    want = tefuse.build(graph, "llvm").run(x=xv)[0]
    assert np.abs(got - want).max() <= 1e-2 * np.abs(want).max()


def test_a_vocabulary_projection_with_its_m_tiles_first_matches_numpy(rng):
    """GPT-2's head at 512 rows: its 77 MB weight puts the M tiles on blockIdx.x
    (tiles.m_tiles_first), 50257 columns leave a ragged last N tile."""
    from tefuse.schedules.common import launch_extents
    from tests.schedules.cuda.gemm.test_mma import _dense

    m, n, k = 512, 50257, 768
    graph = _dense(m, n, k, "float16")
    cg = tefuse.build(graph, "cuda")
    assert [kn.template for kn in cg.kernels] == ["wgmma_gemm"]
    grid = launch_extents(str(cg.kernels[0].tir))
    assert (grid["blockIdx.x"], grid["blockIdx.y"]) == (4, 393)
    x = rng.standard_normal((m, k)).astype(np.float16)
    w = (rng.standard_normal((n, k)) / np.sqrt(k)).astype(np.float16)
    bias = rng.standard_normal(n).astype(np.float16)
    got = cg.run(x=x, w=w, bias=bias)[0].astype(np.float32)
    want = np.maximum(x.astype(np.float32) @ w.astype(np.float32).T + bias.astype(np.float32), 0)
    assert np.abs(got - want).max() <= 1e-2 * np.abs(want).max()
