"""The CUDA depthwise conv2d template on a real GPU vs the float64 numpy reference: the
fallback config and a seeded sample of the space, for depthwise + bias + batch_norm + relu6.

Deselected by default (`addopts` has `-m 'not gpu ...'`); run with
    python -m pytest -m gpu tests/gpu/test_conv2d_depthwise_gpu.py -q
Skips cleanly when `tefuse.target.has_gpu()` is false.
"""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse.driver import build_group
from tefuse.codegen.schedule import ScheduleChoice
from tefuse.runtime.executor import CompiledGraph
from tefuse.tune.task import as_tasks
from tests.reference import assert_close, batch_norm, conv2d
from tests.schedules.gpu.test_conv2d_depthwise import dw_chain, sample_fitting

pytestmark = pytest.mark.gpu


def chain_reference(g, feeds: dict, kw: dict) -> np.ndarray:
    layout = kw.get("layout", "NCHW")
    ax = 1 if layout == "NCHW" else 3
    c = kw.get("c", 32)
    k = kw.get("k", 3)
    const = {n.name: n.value.astype(np.float64) for n in g.constants}
    x = feeds["x"].astype(np.float64)
    if kw.get("prologue"):
        x = np.maximum(x, 0)
    y = conv2d(x, const["w"], strides=kw.get("stride", 1), padding=k // 2, groups=c, layout=layout)
    if not kw.get("epilogue", True):
        return y
    shape = [1, 1, 1, 1]
    shape[ax] = -1
    y = y + const["bias"].reshape(shape)
    y = batch_norm(y, const["gamma"], const["beta"], const["mean"], const["var"], axis=ax)
    return np.clip(y, 0, 6)


def _tol(dtype):
    return dict(rtol=1e-2, atol=5e-2) if dtype == "float16" else dict(rtol=1e-4, atol=1e-4)


def _check(cg, g, kw, rng, what=""):
    feeds = {i.name: rng.standard_normal(i.shape).astype(i.dtype) for i in g.inputs}
    (y,) = cg.run(**feeds)
    dtype = kw.get("dtype", "float32")
    return assert_close(y, chain_reference(g, feeds, kw), dtype, **_tol(dtype), what=f"{kw} {what}")


CHAINS = [
    pytest.param(dict(c=32, hw=112), id="mbv2_32x112x112"),
    pytest.param(dict(c=144, hw=56, stride=2), id="mbv2_144x56x56_s2"),
    pytest.param(dict(c=960, hw=7), id="mbv2_960x7x7"),
    pytest.param(dict(c=960, hw=7, layout="NHWC"), id="nhwc_960x7x7"),
    pytest.param(dict(n=16, c=96, hw=28, layout="NHWC", stride=2), id="b16_nhwc_s2"),
    pytest.param(dict(n=16, c=32, hw=28), id="b16_nchw"),
    pytest.param(dict(c=64, hw=30, dtype="float16"), id="fp16_nchw"),
    pytest.param(dict(c=64, hw=29, dtype="float16", layout="NHWC", stride=2), id="fp16_nhwc_s2_odd"),
    pytest.param(dict(c=16, hw=20, mult=2), id="multiplier2_nchw"),
    pytest.param(dict(c=16, hw=20, mult=3, layout="NHWC", k=5, stride=2), id="multiplier3_nhwc_5x5_s2"),
    pytest.param(dict(c=24, hw=18, prologue=True), id="prologue_relu"),
    pytest.param(dict(c=24, hw=18, layout="NHWC", epilogue=False), id="bare_conv_nhwc"),
    pytest.param(dict(n=2, c=96, hw=56, k=7, layout="NHWC", dtype="float16"), id="convnext_7x7_fp16_rows"),
    pytest.param(dict(c=40, hw=15, k=5, layout="NHWC", dtype="float16", prologue=True, stride=2),
                 id="fp16_nhwc_5x5_s2_prologue_rows"),
]


@pytest.mark.parametrize("kw", CHAINS)
def test_fallback_matches_numpy(rng, kw):
    g = dw_chain(**kw)
    cg = tefuse.build(g, "cuda")
    assert cg.num_kernels == 1 and cg.kernels[0].template == "conv2d_depthwise"
    err = _check(cg, g, kw, rng, "fallback")
    print(f"\n{kw}: fallback max abs err {err:.3g}")


@pytest.mark.parametrize("kw", [CHAINS[1], CHAINS[4], CHAINS[7], CHAINS[9], CHAINS[10]])
def test_sampled_configs_match_numpy(rng, kw):
    g = dw_chain(**kw)
    (task,) = as_tasks(g, "cuda")  # the task's group holds this graph's nodes
    configs = sample_fitting(task, 4, seed=7)
    for cfg in configs:
        kernel = build_group(task.group, task.target, choice=ScheduleChoice(task.template(), cfg, "test"))
        cg = CompiledGraph(g, task.target, [kernel])
        err = _check(cg, g, kw, rng, f"config {cfg.values}")
        print(f"\n{kw} #{cfg.index} {cfg.values}: max abs err {err:.3g}")


def test_a_transposed_nchw_input_through_the_rows_stage_matches_llvm():
    """ShuffleNet's stride-2 branch: an NHWC depthwise conv reading an NCHW tensor through a
    transposing prologue; the rows stage loads its gathered channels as scalars (compiled by the
    GPU machine's nvcc, which refused the vector form)."""
    rng = np.random.default_rng(0)
    b = tefuse.GraphBuilder()
    x = b.transpose(b.input("x", (2, 232, 14, 14), "float16"), axes=(0, 2, 3, 1))
    w = b.const((rng.standard_normal((3, 3, 1, 232)) * 0.3).astype("float16"), name="w")
    g = b.build(b.conv2d(x, w, padding=1, strides=2, layout="NHWC", groups=232, name="conv"))
    cg = tefuse.build(g, "cuda")
    assert [k.template for k in cg.kernels] == ["conv2d_depthwise"]
    xv = rng.standard_normal((2, 232, 14, 14)).astype(np.float16)
    got = cg.run(x=xv)[0].astype(np.float32)
    want = tefuse.build(g, "llvm").run(x=xv)[0].astype(np.float32)
    assert np.abs(got - want).max() <= 1e-2 * np.abs(want).max()
