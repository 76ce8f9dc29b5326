"""The CUDA dense template on a real GPU vs a float64 numpy reference: the fallback and a
seeded sample of configs, for batch 1 (K threads + cross-thread reduction) and batched
(register-tiled GEMM) shapes, with prologue, fp16 and batched-matmul variants.

Deselected by default (`addopts` has `-m 'not gpu ...'`); run with
    python -m pytest -m gpu tests/gpu/test_dense_gpu.py -q
Skips cleanly when `tefuse.target.has_gpu()` is false.
"""
from __future__ import annotations

import random

import numpy as np
import pytest

import tefuse
from tefuse.driver import build_group
from tefuse.codegen.schedule import ScheduleChoice
from tefuse.runtime.executor import CompiledGraph
from tests.reference import assert_close
from tests.schedules.gpu.test_dense import CHAINS as CPU_CHAINS, batched_matmul, dense_chain, task_of

pytestmark = pytest.mark.gpu

CHAINS = CPU_CHAINS + [  # the shapes the CPU tests generate code for, and more
    pytest.param(dict(m=24, k=300, n=250, prologue="scale"), id="batch24_odd"),
    pytest.param(dict(m=1, k=512, n=10, epilogue=False), id="batch1_tiny_no_epilogue"),
    pytest.param(dict(m=1, k=2048, n=1000, dtype="float16"), id="fp16_batch1"),
    pytest.param(dict(m=197, k=768, n=2304), id="vit_qkv_prime_m"),
    pytest.param(dict(m=197, k=197, n=197, prologue="scale"), id="prime_mnk"),
    pytest.param(dict(m=1, k=197, n=100), id="gemv_prime_k"),
]


def reference(g, x: np.ndarray, kw: dict) -> np.ndarray:
    const = {n.name: n.value.astype(np.float64) for n in g.constants}
    x = x.astype(np.float64).reshape(x.shape[0], -1)
    if kw.get("prologue") == "scale":
        x = x * 0.5
    y = x @ const["w"].T
    if kw.get("epilogue", True):
        y = np.maximum(y + const["bias"], 0)
    return y


def _tol(dtype):
    return dict(rtol=2e-2, atol=2e-2) if dtype == "float16" else dict(rtol=1e-4, atol=1e-4)


def _configs(task, count: int, seed: int = 0):
    space = task.space("cuda_dense")
    rng = random.Random(seed)
    return [task.fallback("cuda_dense")] + [space.get(i) for i in rng.sample(range(len(space)), min(count, len(space)))]


def _run(task, g, cfg, feeds):
    kernel = build_group(task.group, task.target, choice=ScheduleChoice(task.template("cuda_dense"), cfg, "test"))
    return CompiledGraph(g, task.target, [kernel]).run(**feeds)[0]


@pytest.mark.parametrize("kw", CHAINS)
def test_dense_chain_matches_numpy(rng, kw):
    g = dense_chain(**kw)
    task = task_of(g)
    dtype = kw.get("dtype", "float32")
    feeds = {i.name: rng.standard_normal(i.shape).astype(i.dtype) for i in g.inputs}
    ref = reference(g, feeds["x"], kw)
    for cfg in _configs(task, 4):
        y = _run(task, g, cfg, feeds)
        assert_close(y, ref, dtype, **_tol(dtype), what=f"{kw} config {cfg.values}")


def test_fallback_through_build_matches_numpy(rng):
    kw = dict(m=1, k=2048, n=1000, prologue="flatten")
    g = dense_chain(**kw)
    cg = tefuse.build(g, "cuda")
    assert cg.kernels[0].template == "cuda_dense"
    x = rng.standard_normal((1, 2048, 1, 1)).astype("float32")
    (y,) = cg.run(x)
    assert_close(y, reference(g, x, kw), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kw", [dict(), dict(batch=(12,), m=197, k=64, n=197), dict(batch=(197,), m=1, k=768, n=2304)],
                         ids=["small", "attention_197", "seq_first_qkv"])
def test_batched_matmul_matches_numpy(rng, kw):
    g = batched_matmul(**kw)
    task = task_of(g)
    a = rng.standard_normal(g.inputs[0].shape).astype("float32")
    w = next(n.value for n in g.constants if n.name == "w").astype(np.float64)
    ref = np.maximum(a.astype(np.float64) @ w, 0)
    for cfg in _configs(task, 4, seed=1):
        assert_close(_run(task, g, cfg, {"a": a}), ref, rtol=1e-4, atol=1e-4, what=str(cfg.values))
