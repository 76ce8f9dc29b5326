"""The CUDA implicit-GEMM conv2d template, without a GPU: conv + bias + (batch_norm | add) +
relu chains (NCHW and NHWC, stride 2, asymmetric padding, float16) build to exactly one
kernel with shared-memory tiles under the fallback and a seeded sample of the space, the
template is offered next to conv2d_direct (which stays the fallback) but never for grouped
or depthwise convs, a tuning record for it is honoured at build time, and the fallback
compiles to sm_90 PTX."""
from __future__ import annotations

import random
import re
import shutil
from types import SimpleNamespace

import numpy as np
import pytest

import tefuse.schedules as schedules
import tefuse
from tefuse import GraphBuilder
from tefuse.codegen.compile import compile_module
from tefuse.codegen.ptx import compile_to_ptx, cuda_kernel_names, ptx_entries
from tefuse.codegen.schedule import ScheduleChoice, apply_schedule, choose_schedule
from tefuse.driver import prepare_graph
from tefuse.tune.task import Task, as_tasks
from tefuse.schedules.gpu.conv2d_implicit_gemm import Conv2dImplicitGemm, gemm_shape

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")

NAME = "conv2d_implicit_gemm"
SHARED = re.compile(r"__shared__\s+(?:alignas\(\d+\)\s+)?(\w+)\s+(\w+)\[")


def ig_chain(kind="bn", layout="NCHW", dtype="float32", n=1, c=16, hw=12, k=32, stride=1,
             padding=1, groups=1, ksize=3, seed=0):
    """conv2d + bias + (batch_norm | add(residual) | nothing) + relu, constants for params."""
    rng = np.random.default_rng(seed)
    b = GraphBuilder()
    xs = (n, c, hw, hw) if layout == "NCHW" else (n, hw, hw, c)
    ws = (k, c // groups, ksize, ksize) if layout == "NCHW" else (ksize, ksize, c // groups, k)
    ax = 1 if layout == "NCHW" else 3
    x = b.input("x", xs, dtype)
    w = b.const((rng.standard_normal(ws) * 0.2).astype(dtype), name="w")
    y = b.conv2d(x, w, strides=stride, padding=padding, layout=layout, groups=groups, name="conv")
    if kind == "bare":
        return b.build(y)
    y = b.bias_add(y, b.const(rng.standard_normal(k).astype(dtype), name="bias"), axis=ax, name="biased")
    if kind == "residual":
        y = b.add(y, b.input("res", y.shape, dtype), name="summed")
    elif kind == "bn":
        params = [rng.uniform(0.5, 1.5, k), rng.standard_normal(k), rng.standard_normal(k),
                  rng.uniform(0.5, 2, k)]
        y = b.batch_norm(y, *(b.const(p.astype(dtype), name=nm) for p, nm in
                              zip(params, ["gamma", "beta", "mean", "var"])), axis=ax, name="bn")
    return b.build(b.relu(y, name="out"))


CHAINS = [
    pytest.param(dict(kind="bn"), id="nchw_bn"),
    pytest.param(dict(kind="residual", layout="NHWC", stride=2, padding=(1, 0, 2, 1)), id="nhwc_residual_s2_asym"),
    pytest.param(dict(kind="bn", layout="NHWC", dtype="float16", stride=2), id="fp16_nhwc_bn_s2"),
    pytest.param(dict(kind="residual", dtype="float16", padding=(0, 1, 1, 2), n=2, c=8, k=24, hw=9),
                 id="fp16_nchw_residual_asym"),
]


def task_of(**kw) -> Task:
    (task,) = as_tasks(ig_chain(**kw), "cuda")
    assert task.info.anchor_kind == "conv2d"
    return task


def cuda_source(task: Task, cfg) -> str:
    choice = ScheduleChoice(task.template(NAME), cfg, "test")
    module = compile_module(apply_schedule(task.lowered, task.target, choice), task.target)
    (dev,) = [m for m in module.imports if m.kind == "cuda"]
    return dev.inspect_source()


def sample(task: Task, count: int = 8, seed: int = 0) -> list:
    space = task.space(NAME)
    return [space.get(i) for i in random.Random(seed).sample(range(len(space)), min(count, len(space)))]


def _one_kernel_with_shared_tiles(src: str) -> None:
    assert len(cuda_kernel_names(src)) == 1, cuda_kernel_names(src)  # one __global__ definition
    shared = SHARED.findall(src)
    assert len(shared) == 2, shared  # the im2col tile and the weight tile
    assert "__syncthreads()" in src


@pytest.mark.parametrize("kw", CHAINS)
def test_fallback_and_sampled_configs_give_one_kernel_with_shared_tiles(kw):
    task = task_of(**kw)
    configs = [task.fallback(NAME)] + sample(task, 8, seed=len(str(kw)))
    for cfg in configs:
        src = cuda_source(task, cfg)
        try:
            _one_kernel_with_shared_tiles(src)
        except AssertionError as e:
            raise AssertionError(f"config {cfg.values}: {e}") from None
        ctype = "half" if kw.get("dtype") == "float16" else "float"
        assert {t for t, _ in SHARED.findall(src)} == {ctype}


def test_bare_conv_and_1x1_and_dilation_build():
    """The anchor as the group's output (a write-back from registers), 1x1 and dilated convs."""
    for kw, extra in [(dict(kind="bare", stride=2, padding=(1, 0, 2, 1)), {}),
                      (dict(kind="bn", ksize=1, padding=0, c=32, k=16), {}),
                      (dict(kind="residual", layout="NHWC"), dict(dilation=2))]:
        if extra:
            g = _dilated(**kw)
            (task,) = as_tasks(g, "cuda")
        else:
            task = task_of(**kw)
        for cfg in [task.fallback(NAME)] + sample(task, 2):
            _one_kernel_with_shared_tiles(cuda_source(task, cfg))


def _dilated(kind, layout):
    b = GraphBuilder()
    x = b.input("x", (1, 13, 13, 8) if layout == "NHWC" else (1, 8, 13, 13))
    w = b.const(np.ones((3, 3, 8, 16) if layout == "NHWC" else (16, 8, 3, 3), "float32"), name="w")
    y = b.conv2d(x, w, padding=2, dilation=2, layout=layout, name="conv")
    return b.build(b.relu(b.add(y, b.input("res", y.shape), name="summed")))


def test_offered_after_direct_which_stays_the_fallback():
    task = task_of()
    assert [t.name for t in task.templates][:2] == ["conv2d_direct", NAME]
    assert len(task.space(NAME)) > 1
    choice = choose_schedule(task.lowered, task.target, None)
    assert choice.template.name == "conv2d_direct" and choice.source == "fallback"


def test_tuning_record_for_it_is_used_at_build():
    g = ig_chain(kind="bn", c=16, k=32, hw=10)
    (task,) = as_tasks(prepare_graph(g, "cuda"), "cuda")  # the graph build fuses, as `tefuse tune` does
    cfg = sample(task, 1, seed=3)[0]

    class OneRecord:
        def best(self, workload, target):
            if workload != task.workload:
                return None
            return SimpleNamespace(template=NAME, config=cfg.to_json())

    choice = choose_schedule(task.lowered, task.target, OneRecord())
    assert choice.template.name == NAME and choice.source == "tuned"
    assert choice.config.values == cfg.values
    cg = tefuse.build(g, "cuda", db=OneRecord())
    assert cg.num_kernels == 1 and cg.kernels[0].template == NAME


@pytest.mark.parametrize("groups,kind", [(4, "conv2d"), (16, "depthwise_conv2d")])
def test_never_offered_for_grouped_or_depthwise(groups, kind):
    (task,) = as_tasks(ig_chain(c=16, k=32 if groups == 4 else 16, groups=groups), "cuda")
    assert task.info.anchor_kind == kind
    assert NAME not in [t.name for t in task.templates]
    assert all(t.name != NAME for t in schedules.get_templates("cuda", "depthwise_conv2d"))
    if kind == "conv2d":
        assert not Conv2dImplicitGemm().accepts(task.info)
        with pytest.raises(ValueError, match="groups"):
            Conv2dImplicitGemm().space(task.info, task.target)
        # building still works: conv2d_direct takes it
        assert tefuse.build(ig_chain(c=16, k=32, groups=groups), "cuda").num_kernels == 1


@pytest.mark.parametrize("n,c,hw,k", [(1, 64, 56, 64), (1, 128, 28, 128), (1, 256, 14, 256),
                                      (1, 512, 7, 512), (16, 64, 56, 64), (16, 128, 28, 128),
                                      (16, 256, 14, 256), (16, 512, 7, 512)])
def test_fallback_for_resnet50_3x3_convs(n, c, hw, k):
    """Perfect-divisor tiles, 64..512 threads, at least a wave of blocks; big GEMMs get the
    classic 64x64 block tile of 256 threads with 4x4 outputs each (two interleaved 2x2s)."""
    from tefuse.codegen.lower import lower_group
    from tefuse.fusion import fuse_graph

    info = lower_group(fuse_graph(ig_chain(kind="bias", n=n, c=c, hw=hw, k=k))[0]).info
    tmpl = Conv2dImplicitGemm()
    gs = gemm_shape(info)
    cfg = tmpl.fallback(info, None, tmpl.space(info, None))
    tm, tn, tk = cfg["tile_m"], cfg["tile_n"], cfg["tile_k"]
    assert np.prod(tm) == gs.m and np.prod(tn) == gs.k and np.prod(tk) == gs.r == c * 9
    assert 64 <= tm[2] * tn[2] <= 512, cfg.values
    assert tm[0] * tn[0] >= 132, cfg.values  # every SM of an H100 gets a block
    assert tk[1] == 16, cfg.values
    if n == 16:
        assert tm[1] * tm[3] * tn[1] * tn[3] >= 4, cfg.values  # a register tile
    if (n, hw) in ((16, 56), (16, 28)):
        assert (tm[1:], tn[1:]) == ((2, 16, 2), (2, 16, 2)), cfg.values


@needs_nvcc
@pytest.mark.parametrize("kw", [CHAINS[0], CHAINS[2]])
def test_fallback_compiles_to_sm90_ptx(kw):
    task = task_of(**kw)
    src = cuda_source(task, task.fallback(NAME))
    ptx = compile_to_ptx(src, "sm_90")
    assert re.search(r"^\.target\s+sm_90\b", ptx, re.M), ptx[:400]
    assert ptx_entries(ptx) == cuda_kernel_names(src)
    assert ".shared" in ptx


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_an_se_gate_with_a_transposed_epilogue_goes_to_another_template():
    """EfficientNet's squeeze-excite gate in fp16: its 1x1 conv on 1x1 pixels ends in the layout
    pass's NHWC -> NCHW transpose, which implicit GEMM's [M, K] re-indexing cannot take (the
    build failed naming its epilogue block); the conv now goes to a template that takes it."""
    rng = np.random.default_rng(0)
    c, r = 96, 4
    b = GraphBuilder()
    x = b.input("x", (1, c, 28, 28))
    s = b.global_avg_pool2d(x)
    s = b.relu(b.bias_add(b.conv2d(s, b.const(rng.standard_normal((r, c, 1, 1)).astype("float32"))),
                          b.const(rng.standard_normal(r).astype("float32")), axis=1))
    s = b.sigmoid(b.bias_add(b.conv2d(s, b.const(rng.standard_normal((c, r, 1, 1)).astype("float32"))),
                             b.const(rng.standard_normal(c).astype("float32")), axis=1))
    g = b.build(b.conv2d(b.mul(x, s), b.const(rng.standard_normal((40, c, 1, 1)).astype("float32"))))
    cg = tefuse.build(g, "cuda:sm_90", precision="fp16")
    gate = [k for k in cg.kernels if "sigmoid" in k.group.name]
    assert gate and all(k.template != "conv2d_implicit_gemm" for k in gate), [(k.group.name, k.template) for k in cg.kernels]
