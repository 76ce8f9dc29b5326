"""The driver: the retry of a group no config can schedule whole (its anchor is built bare), and
groups scheduled in threads as one after another would schedule them, errors in their order."""
import logging
import re

import numpy as np

import pytest

import tefuse
from tefuse import driver
from tefuse.codegen.compile import MAX_LOCAL_BYTES
from tefuse.fusion import fuse_graph
from tefuse.graph import GraphBuilder

RNG = np.random.default_rng(0)
BIAS = RNG.standard_normal((1, 3, 49, 49)).astype("f4")
MASK = RNG.standard_normal((1, 64, 1, 49, 49)).astype("f4")


def window_scores():
    """Swin's window attention scores: a batched q @ k^T, the relative-position bias, then the
    shifted-window mask added through a reshape that splits the batch and back."""
    b = GraphBuilder()
    q, k = b.input("q", (64, 3, 49, 32)), b.input("k", (64, 3, 32, 49))
    s = b.add(b.matmul(q, k), b.const(BIAS))
    s = b.reshape(s, shape=(1, 64, 3, 49, 49))
    s = b.add(s, b.const(MASK))
    return b.build(b.reshape(s, shape=(64, 3, 49, 49)))


def test_bare_anchors_take_no_epilogue():
    g = window_scores()
    assert len(fuse_graph(g)) == 1
    (mm,) = [n.name for n in g.nodes if n.op == "matmul"]
    groups = fuse_graph(g, bare_anchors=frozenset({mm}))
    assert [[n.op for n in grp.nodes] for grp in groups] == [["matmul"], ["add", "reshape", "add", "reshape"]]


def regrouped_scores():
    """The scores with a mask added over each (head, row) pair regrouped as one axis of 147: the
    GEMM's padded tile rows would be stored over the next batch entry's, so the template refuses
    the reshaping epilogue."""
    b = GraphBuilder()
    q, k = b.input("q", (64, 3, 49, 32)), b.input("k", (64, 3, 32, 49))
    s = b.reshape(b.add(b.matmul(q, k), b.const(BIAS)), shape=(64, 147, 49))
    s = b.add(s, b.const(RNG.standard_normal((1, 147, 1)).astype("f4")))
    return b.build(b.reshape(s, shape=(64, 3, 49, 49)))


def _local_bytes(k) -> int:
    return max([int(n) * 4 for n in re.findall(r"float \w*local\w*\[(\d+)\]", k.source("cuda"))], default=0)


def test_a_group_its_template_cannot_schedule_whole_is_built_with_its_anchor_bare(caplog):
    with caplog.at_level(logging.INFO, logger="tefuse.driver"):
        cg = tefuse.build(regrouped_scores(), "cuda:sm_90")
    assert [k.template for k in cg.kernels] == ["cuda_dense", "cuda_injective"]
    assert "epilogue that reshapes the output" in caplog.text and "without its epilogue" in caplog.text
    assert all(_local_bytes(k) <= MAX_LOCAL_BYTES for k in cg.kernels)


def test_swins_window_scores_fuse_whole_on_cuda():
    """The mask's reshape splits the batch and joins it back: the dims both shapes share keep
    their index (ops/transform.py's reshape), so the epilogue reads the accumulators as the
    thread computed them and the group stays one kernel."""
    cg = tefuse.build(window_scores(), "cuda:sm_90")
    assert [k.template for k in cg.kernels] == ["cuda_dense"]
    assert _local_bytes(cg.kernels[0]) <= MAX_LOCAL_BYTES


def test_the_llvm_build_stays_one_kernel_and_right():
    q, k = RNG.standard_normal((64, 3, 49, 32)).astype("f4"), RNG.standard_normal((64, 3, 32, 49)).astype("f4")
    cg = tefuse.build(window_scores(), "llvm")
    assert cg.num_kernels == 1
    want = ((q @ k + BIAS).reshape(1, 64, 3, 49, 49) + MASK).reshape(64, 3, 49, 49)
    np.testing.assert_allclose(cg.run(q, k)[0], want, rtol=1e-4, atol=1e-4)


def _chain():
    """Several groups of different templates: conv+relu, a pool, a Linear, a softmax."""
    b = GraphBuilder()
    y = b.relu(b.conv2d(b.input("x", (2, 8, 12, 12)), b.const(RNG.standard_normal((8, 8, 3, 3)).astype("f4")),
                        padding=1))
    y = b.flatten(b.global_avg_pool2d(b.max_pool2d(y, kernel=2, strides=2)))
    return b.build(b.softmax(b.dense(y, b.const(RNG.standard_normal((10, 8)).astype("f4"))), axis=-1))


def test_threads_schedule_what_one_thread_schedules():
    g = _chain()
    one, many = tefuse.build(g, "cuda:sm_90", jobs=1), tefuse.build(g, "cuda:sm_90", jobs=4)
    assert len(one.kernels) >= 4
    assert [(k.group.name, k.template, k.config_index) for k in one.kernels] == \
        [(k.group.name, k.template, k.config_index) for k in many.kernels]
    assert [k.source("cuda") for k in one.kernels] == [k.source("cuda") for k in many.kernels]


def test_the_first_groups_error_is_raised(monkeypatch):
    """Two groups fail in threads: the error is the one the first in order meets."""
    real = driver.prepare_group

    def failing(group, *a, **kw):
        if group.anchor is not None:
            raise tefuse.errors.BuildError(f"no schedule for {group.name}")
        return real(group, *a, **kw)

    monkeypatch.setattr(driver, "prepare_group", failing)
    groups = fuse_graph(_chain())
    first = next(grp.name for grp in groups if grp.anchor is not None)
    with pytest.raises(tefuse.errors.BuildError, match=f"no schedule for {first}$"):
        tefuse.build(_chain(), "llvm", jobs=4)


def test_groups_repeating_a_workload_are_scheduled_once_and_computed_with_their_own_weights(monkeypatch):
    """Three conv + ReLU blocks of one workload, each its own weight: one schedule, three kernels
    sharing one module, each reading its own weight (numpy's answer)."""
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x = b.input("x", (1, 8, 6, 6))
    ws = [(rng.standard_normal((8, 8, 3, 3)) * 0.3).astype(np.float32) for _ in range(3)]
    y = x
    for k, w in enumerate(ws):
        y = b.relu(b.conv2d(y, b.const(w, name=f"w{k}"), padding=1))
    scheduled = []
    prepare = driver.prepare_group
    monkeypatch.setattr(driver, "prepare_group", lambda g, *a, **kw: scheduled.append(g.name) or prepare(g, *a, **kw))
    cg = tefuse.build(b.build(y), "llvm")
    assert len(scheduled) == 1 and cg.num_kernels == 3
    assert len({id(k.module) for k in cg.kernels}) == 1
    xv = rng.standard_normal((1, 8, 6, 6)).astype(np.float32)
    want = xv
    for w in ws:
        p = np.pad(want, ((0, 0), (0, 0), (1, 1), (1, 1)))
        want = np.maximum(sum(np.einsum("nchw,kc->nkhw", p[:, :, i:i + 6, j:j + 6], w[:, :, i, j])
                              for i in range(3) for j in range(3)), 0)
    np.testing.assert_allclose(cg.run(x=xv)[0], want, rtol=1e-4, atol=1e-4)


def test_over_symbolic_dims_the_graph_splits_what_hoppers_cluster_split_would_have():
    """The in-kernel cluster split takes whole tiles of rows, which a run-time M need not have:
    a dynamic graph's split rules leave nothing to it; a fixed-size graph's keep it; the CPU
    splits nothing."""
    from tefuse.driver import split_policy
    from tefuse.target import make_target

    hopper = make_target("cuda:sm_90")
    assert split_policy(hopper, True, False).in_kernel is not None
    assert split_policy(hopper, True, True).in_kernel is None
    assert split_policy(hopper, False, True) is None and split_policy(make_target("llvm"), True, True) is None


def test_a_build_compiles_under_the_short_switch_interval_and_restores_the_callers():
    """gil.py: the build's threads hand the GIL on quickly while they run, and the caller's
    interval comes back after."""
    import sys

    from tefuse import gil

    b = GraphBuilder()
    x = b.input("x", (4, 8))
    g = b.build(b.relu(b.dense(x, b.const(RNG.standard_normal((8, 8)).astype("f4")))))
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.005)
    seen = []
    try:
        tefuse.build(g, "llvm", progress=lambda done, total: seen.append(sys.getswitchinterval()))
        after = sys.getswitchinterval()
    finally:
        sys.setswitchinterval(before)
    assert seen and all(s == pytest.approx(gil.BUILD_SWITCH_INTERVAL, abs=2e-6) for s in seen)
    assert after == pytest.approx(0.005)
