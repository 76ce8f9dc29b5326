"""The CUDA cross-thread reduction template on a real GPU: sum / mean / max / min, softmax /
log_softmax and pooling chains, with the fallback config and a few seeded random configs
of the space, vs float64 numpy.

Deselected by default; run with  python -m pytest -m gpu tests/gpu/test_reduction_gpu.py -q
"""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

import tefuse
from tefuse.driver import build_group
from tefuse.codegen.schedule import ScheduleChoice
from tefuse.fusion import fuse_graph
from tefuse.runtime.executor import CompiledGraph
from tefuse.target import make_target
from tefuse.tune.task import task_from_group
from tests import reference as R
from tests.schedules.gpu.test_reduction import TEMPLATE, chain

pytestmark = pytest.mark.gpu

NP = {"reduce_sum": np.sum, "reduce_mean": np.mean, "reduce_max": np.max, "reduce_min": np.min}
RANDOM_CONFIGS = 4

CASES = [
    ("reduce_sum", (8, 64), dict(axes=(1,))),
    ("reduce_sum", (7, 33), dict(axes=(1,))),
    ("reduce_mean", (2, 64, 56, 56), dict(axes=(2, 3), keepdims=True)),
    ("reduce_mean", (3, 5, 9, 9), dict(axes=(2, 3))),
    ("reduce_sum", (2, 49, 2048), dict(axes=(1, 2))),
    ("reduce_max", (6, 5, 33), dict(axes=(0, 2))),
    ("reduce_max", (300, 3), dict(axes=(1,))),
    ("reduce_min", (40, 1000), dict(axes=(0,))),
    ("reduce_sum", (5, 7), dict(axes=None)),
    ("reduce_mean", (4, 130), dict(axes=(1,)), "float16"),
    ("softmax", (64, 10), dict()),
    ("softmax", (7, 1000), dict()),
    ("softmax", (3, 4097), dict()),
    ("softmax", (4, 10, 6), dict(axis=1)),
    ("log_softmax", (5, 40), dict()),
    ("softmax", (8, 96), dict(), "float16"),
    ("global_avg_pool2d", (2, 64, 7, 7), dict()),
    ("global_avg_pool2d", (2, 7, 7, 40), dict(layout="NHWC")),
    ("global_max_pool2d", (1, 32, 56, 56), dict()),
    ("max_pool2d", (2, 8, 9, 9), dict(kernel=3, strides=2, padding=1)),
    ("avg_pool2d", (2, 8, 9, 9), dict(kernel=3, strides=2, padding=1, ceil_mode=True)),
    ("avg_pool2d", (1, 9, 9, 8), dict(kernel=2, strides=2, layout="NHWC", count_include_pad=True)),
    ("lrn", (1, 8, 4, 4), dict()),
    ("layer_norm", (2, 197, 768), dict()),
    ("layer_norm", (5, 33), dict()),
    ("layer_norm", (16, 96), dict(), "float16"),
]


def _layer_norm(g, x):
    """float64 LayerNorm over the last axis with the chain's scale and bias constants."""
    scale, bias = (np.asarray(n.value, np.float64) for n in g.constants)
    m = x.mean(-1, keepdims=True)
    return (x - m) / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + 1e-5) * scale + bias


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def reference(op, x, attrs):
    x = x.astype(np.float64) * 0.5 if not op.endswith("softmax") else x.astype(np.float64)
    if op in NP:
        axes = attrs.get("axes")
        y = NP[op](x, axis=None if axes is None else tuple(axes), keepdims=attrs.get("keepdims", False))
    elif op == "softmax":
        return R.softmax(x, axis=attrs.get("axis", -1))
    elif op == "log_softmax":
        return R.log_softmax(x, axis=attrs.get("axis", -1))
    elif op.startswith("global_"):
        hw = (1, 2) if attrs.get("layout") == "NHWC" else (2, 3)
        y = (np.mean if "avg" in op else np.max)(x, axis=hw, keepdims=True)
    elif op == "lrn":
        y = R.lrn(x)
    else:
        p = attrs.get("padding", 0)
        y = R.pool2d(x, op[:3], _pair(attrs["kernel"]), _pair(attrs.get("strides", 1)), (p, p, p, p),
                     ceil_mode=attrs.get("ceil_mode", False),
                     count_include_pad=attrs.get("count_include_pad", False),
                     layout=attrs.get("layout", "NCHW"))
    return np.maximum(y, 0)


def _configs(task, template=TEMPLATE):
    space = task.space(template)
    idx = random.Random(len(space)).sample(range(len(space)), min(RANDOM_CONFIGS, len(space)))
    return [("fallback", task.fallback(template))] + [(f"#{i}", space.get(i)) for i in idx]


def _id(case):
    dtype = case[3] if len(case) > 3 else ""
    return f"{case[0]}_{'x'.join(map(str, case[1]))}{'_' + dtype if dtype else ''}"


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_reduction_configs_match_numpy(rng, case):
    op, shape, attrs = case[:3]
    dtype = case[3] if len(case) > 3 else "float32"
    g = chain(op, shape, dtype, **attrs)
    tgt = make_target("cuda")
    groups = fuse_graph(g)
    (anchor,) = [grp for grp in groups if grp.anchor is not None]
    task = task_from_group(anchor, tgt)
    # NHWC window pools are the window-pool template's by default (test_pool_gpu.py); this
    # template stays in their tuning space, and is checked here by name
    assert task.template(TEMPLATE).name == TEMPLATE
    x = (rng.standard_normal(shape) * 2).astype(dtype)
    ref = _layer_norm(g, x.astype(np.float64)) if op == "layer_norm" else reference(op, x, attrs)
    red = max(1, x.size // max(1, ref.size)) if not op.endswith("pool2d") or op.startswith("global") else 9
    if dtype == "float16":
        tol = dict(rtol=1e-2, atol=3e-2)
    else:
        tol = dict(rtol=1e-4, atol=1e-5 * max(1.0, math.sqrt(red)))
    for label, cfg in _configs(task):
        kernels = [build_group(grp, tgt, choice=ScheduleChoice(task.template(TEMPLATE), cfg, "tuned"))
                   if grp is anchor else build_group(grp, tgt) for grp in groups]
        (y,) = CompiledGraph(g, tgt, kernels).run(x)
        R.assert_close(y, ref, dtype, what=f"{op}{shape} {label} {cfg.values}", **tol)


@pytest.mark.parametrize("op,shape,attrs", [("reduce_max", (64, 1024), {"axes": (1,)}),
                                            ("reduce_min", (32, 7, 5), {"axes": (0, 2)}),
                                            ("max_pool2d", (1, 8, 16, 16), {"kernel": 3, "strides": 2, "padding": 1}),
                                            ("global_max_pool2d", (1, 64, 14, 14), {})])
def test_nan_wins_max_min_on_cuda(op, shape, attrs):
    """NaN anywhere in a reduction or a pooling window gives NaN (numpy, PyTorch), through the
    order-key reductions (tefuse/ops/nanprop.py); -inf and +inf stay exact."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype("float32")
    flat = x.reshape(-1)
    flat[rng.choice(flat.size, 5, replace=False)] = np.nan
    flat[rng.choice(flat.size, 5, replace=False)] = -np.inf
    flat[rng.choice(flat.size, 5, replace=False)] = np.inf
    got = R.run_op(op, x, target="cuda", **attrs)
    want = R.run_op(op, x, target="llvm", **attrs)  # tests/ops/test_nan.py checks llvm against numpy
    np.testing.assert_array_equal(got, want)
