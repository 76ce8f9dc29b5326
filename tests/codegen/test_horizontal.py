"""Horizontal fusion (codegen/horizontal.py, driver.merge_horizontal): independent kernels as one
launch, against the same kernels launched apart."""
from __future__ import annotations

import re

import numpy as np
import pytest

import tefuse
from tefuse.codegen.horizontal import MergeError, Member, merge_launches
from tefuse.graph import GraphBuilder
from tefuse.options import BuildOptions

ON = BuildOptions(horizontal=True)


def _branches():
    """Three independent elementwise chains of different shapes, and one that reads the first's
    result (it must run after it: a run of merged kernels ends there)."""
    b = GraphBuilder()
    x = b.input("x", (1000,))
    y = b.input("y", (37, 11))
    z = b.input("z", (4, 5, 6))
    a = b.relu(b.op("mul", x, b.const(np.float32(2.0), name="two")))
    c = b.op("sigmoid", y)
    d = b.op("tanh", z)
    e = b.op("reshape", b.op("exp", a), shape=(10, 100))
    return b.build([a, c, d, e])


def _feeds(rng):
    return {"x": rng.standard_normal(1000).astype(np.float32), "y": rng.standard_normal((37, 11)).astype(np.float32),
            "z": rng.standard_normal((4, 5, 6)).astype(np.float32)}


@pytest.mark.parametrize("target", ["llvm", "cuda:sm_90"])
def test_independent_kernels_share_one_launch(target):
    g = _branches()
    apart = tefuse.build(g, target)
    merged = tefuse.build(g, target, options=ON)
    assert merged.num_kernels < apart.num_kernels, (merged.num_kernels, apart.num_kernels)
    if target.startswith("cuda"):
        (one,) = [k for k in merged.kernels if k.workload.startswith("horizontal(")]
        src = one.source("cuda")
        assert len(re.findall(r"__global__ void __launch_bounds__\(\d+\) main_kernel\(", src)) == 2  # declared, defined
        assert len(one.outputs) >= 3
        return
    rng = np.random.default_rng(0)
    feeds = _feeds(rng)
    for got, want in zip(merged.run(feeds), apart.run(feeds)):
        np.testing.assert_array_equal(got, want)
    x = feeds["x"]
    np.testing.assert_allclose(merged.run(feeds)[0], np.maximum(2 * x, 0), rtol=1e-6)


def test_a_kernel_reading_a_merged_output_runs_after_it():
    g = _branches()
    merged = tefuse.build(g, "llvm", options=ON)
    order = [k.workload.startswith("horizontal(") for k in merged.kernels]
    assert order[0] and not all(order)  # the merged launch first, the dependent kernel after it
    feeds = _feeds(np.random.default_rng(1))
    np.testing.assert_allclose(merged.run(feeds)[3], np.exp(np.maximum(2 * feeds["x"], 0)).reshape(10, 100), rtol=1e-5)


def test_fewer_than_two_or_mixed_kernels_are_refused():
    from tefuse.codegen.lower import lower_group
    from tefuse.fusion import fuse_graph

    func = lower_group(fuse_graph(_branches())[0]).func
    with pytest.raises(MergeError, match="fewer than two"):
        merge_launches([Member(func, 1)], "m")


def test_a_merged_launch_saves_and_loads(tmp_path):
    g = _branches()
    merged = tefuse.build(g, "llvm", options=ON)
    tefuse.save(merged, tmp_path / "m.tefuse")
    back = tefuse.load(tmp_path / "m.tefuse")
    assert back.num_kernels == merged.num_kernels
    feeds = _feeds(np.random.default_rng(2))
    for got, want in zip(back.run(feeds), merged.run(feeds)):
        np.testing.assert_array_equal(got, want)
