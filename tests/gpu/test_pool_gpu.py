"""The NHWC window-pool template (schedules/gpu/pool.py) on a real GPU: max and avg pools
(fp16 and fp32, padding, count_include_pad, a ReLU epilogue and a scaling prologue), with
the fallback config and a few seeded random configs, vs float64 numpy; NaN in a window wins.

Deselected by default; run with  python -m pytest -m gpu tests/gpu/test_pool_gpu.py -q
"""
from __future__ import annotations

import numpy as np
import pytest

from tefuse.codegen.schedule import ScheduleChoice
from tefuse.driver import build_group
from tefuse.fusion import fuse_graph
from tefuse.runtime.executor import CompiledGraph
from tefuse.target import make_target
from tefuse.tune.task import task_from_group
from tests import reference as R
from tests.gpu.test_reduction_gpu import _configs, reference
from tests.schedules.gpu.test_pool import NAME
from tests.schedules.gpu.test_reduction import chain

pytestmark = pytest.mark.gpu

CASES = [
    ("max_pool2d", (2, 112, 112, 64), dict(kernel=3, strides=2, padding=1, layout="NHWC"), "float16"),
    ("max_pool2d", (2, 11, 11, 32), dict(kernel=3, strides=2, padding=1, layout="NHWC")),
    ("avg_pool2d", (2, 11, 11, 32), dict(kernel=3, strides=2, padding=1, layout="NHWC"), "float16"),
    ("avg_pool2d", (1, 9, 9, 8), dict(kernel=2, strides=2, layout="NHWC", count_include_pad=True)),
    ("max_pool2d", (3, 8, 8, 12), dict(kernel=2, strides=2, layout="NHWC"), "float16"),
]


def _groups(case):
    op, shape, attrs = case[:3]
    dtype = case[3] if len(case) > 3 else "float32"
    g = chain(op, shape, dtype, **attrs)
    groups = fuse_graph(g)
    (anchor,) = [grp for grp in groups if grp.anchor is not None]
    return g, groups, anchor, dtype


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}_{'x'.join(map(str, c[1]))}_{c[3] if len(c) > 3 else 'f32'}")
def test_window_pool_configs_match_numpy(rng, case):
    op, shape, attrs = case[:3]
    g, groups, anchor, dtype = _groups(case)
    tgt = make_target("cuda")
    task = task_from_group(anchor, tgt)
    assert task.template().name == NAME
    x = (rng.standard_normal(shape) * 2).astype(dtype)
    ref = reference(op, x, attrs)
    tol = dict(rtol=1e-2, atol=3e-2) if dtype == "float16" else dict(rtol=1e-5, atol=1e-5)
    for label, cfg in _configs(task, NAME):
        kernels = [build_group(grp, tgt, choice=ScheduleChoice(task.template(NAME), cfg, "tuned"))
                   if grp is anchor else build_group(grp, tgt) for grp in groups]
        (y,) = CompiledGraph(g, tgt, kernels).run(x)
        R.assert_close(y, ref, dtype, what=f"{op}{shape} {label} {cfg.values}", **tol)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_nan_in_a_window_wins(dtype):
    case = ("max_pool2d", (2, 11, 11, 32), dict(kernel=3, strides=2, padding=1, layout="NHWC"), dtype)
    g, groups, anchor, _ = _groups(case)
    tgt = make_target("cuda")
    kernels = [build_group(grp, tgt) for grp in groups]
    x = np.random.default_rng(0).standard_normal(case[1]).astype(dtype)
    x[0, 4, 4, 3], x[1, 0, 0, 7] = np.nan, -np.nan
    (y,) = CompiledGraph(g, tgt, kernels).run(x)
    ref = reference(case[0], x, case[2])
    assert (np.isnan(y) == np.isnan(ref)).all()
