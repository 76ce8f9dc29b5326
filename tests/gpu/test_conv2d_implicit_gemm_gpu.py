"""The CUDA implicit-GEMM conv2d template on a real GPU vs the float64 numpy reference: the
fallback config and a seeded sample of the space, for conv + bias + (batch_norm | add) +
relu chains in NCHW and NHWC, float32 and float16, with stride 2 and asymmetric padding.

Deselected by default (`addopts` has `-m 'not gpu ...'`); run with
    python -m pytest -m gpu tests/gpu/test_conv2d_implicit_gemm_gpu.py -q
Skips cleanly when `tefuse.target.has_gpu()` is false.
"""
from __future__ import annotations

import random

import numpy as np
import pytest

from tefuse.driver import build_group
from tefuse.codegen.schedule import ScheduleChoice
from tefuse.runtime.executor import CompiledGraph
from tefuse.tune.task import as_tasks
from tests.reference import assert_close, batch_norm, conv2d
from tests.schedules.gpu.test_conv2d_implicit_gemm import NAME, ig_chain

pytestmark = pytest.mark.gpu

CHAINS = [
    pytest.param(dict(kind="bn"), id="nchw_bn"),
    pytest.param(dict(kind="residual"), id="nchw_residual"),
    pytest.param(dict(kind="bn", layout="NHWC"), id="nhwc_bn"),
    pytest.param(dict(kind="residual", layout="NHWC", stride=2, padding=(1, 0, 2, 1)), id="nhwc_residual_s2_asym"),
    pytest.param(dict(kind="bn", stride=2, padding=(0, 1, 1, 2), n=2, c=24, k=40, hw=15), id="nchw_bn_s2_asym_odd"),
    pytest.param(dict(kind="bn", dtype="float16"), id="fp16_nchw_bn"),
    pytest.param(dict(kind="residual", layout="NHWC", dtype="float16", stride=2), id="fp16_nhwc_residual_s2"),
    pytest.param(dict(kind="bare", n=2, c=32, k=64, hw=14), id="bare_conv"),
    pytest.param(dict(kind="bn", n=4, c=64, k=64, hw=28), id="resnet_like_batch4"),
]


def chain_reference(g, feeds: dict, kw: dict) -> np.ndarray:
    layout = kw.get("layout", "NCHW")
    ax = 1 if layout == "NCHW" else 3
    const = {n.name: n.value.astype(np.float64) for n in g.constants}
    y = conv2d(feeds["x"], const["w"], strides=kw.get("stride", 1), padding=kw.get("padding", 1),
               layout=layout)
    kind = kw.get("kind", "bn")
    if kind == "bare":
        return y
    shape = [1, 1, 1, 1]
    shape[ax] = -1
    y = y + const["bias"].reshape(shape)
    if kind == "residual":
        y = y + feeds["res"].astype(np.float64)
    elif kind == "bn":
        y = batch_norm(y, const["gamma"], const["beta"], const["mean"], const["var"], axis=ax)
    return np.maximum(y, 0)


def _runnable(cfg) -> bool:
    """Configs that launch on any CUDA GPU: <= 512 threads (a 1024-thread block with a big
    register tile can ask for more registers than an SM has)."""
    return cfg["tile_m"][2] * cfg["tile_n"][2] <= 512


def _tol(dtype):
    return dict(rtol=1e-2, atol=5e-2) if dtype == "float16" else dict(rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kw", CHAINS)
def test_fallback_and_sampled_configs_match_reference(rng, kw):
    g = ig_chain(**kw)
    (task,) = as_tasks(g, "cuda")
    space = task.space(NAME)
    picks = random.Random(7).sample(range(len(space)), min(len(space), 40))
    configs = [task.fallback(NAME)] + [c for c in (space.get(i) for i in picks) if _runnable(c)][:4]
    feeds = {i.name: rng.standard_normal(i.shape).astype(i.dtype) for i in g.inputs}
    ref = chain_reference(g, feeds, kw)
    dtype = kw.get("dtype", "float32")
    for cfg in configs:
        kernel = build_group(task.group, task.target, choice=ScheduleChoice(task.template(NAME), cfg, "test"))
        assert kernel.template == NAME
        (y,) = CompiledGraph(g, task.target, [kernel]).run(**feeds)
        err = assert_close(y, ref, dtype, **_tol(dtype), what=f"{kw} {cfg.values}")
        print(f"\n{kw} {cfg.values}: max abs err {err:.3g}")
