"""Runs from many threads at once: each gets the answer a single-threaded run gives.

A graph's intermediate and output buffers are planned once; runs on several threads must not
share them (CompiledGraph.buffer_set), as ONNX Runtime's InferenceSession.run may be called
from serving threads.
"""
from __future__ import annotations

import concurrent.futures as cf
import threading

import numpy as np

import tefuse
from tefuse import GraphBuilder
from tefuse.plan import FusionPlan, TensorDesc

THREADS, RUNS = 8, 50


def _chain(rng, batch: int = 4):
    """Four kernels (dense, relu and add between them) with intermediates between them."""
    b = GraphBuilder()
    x = b.input("x", (batch, 64))
    ws = [rng.standard_normal((64, 64)).astype("float32") / 8 for _ in range(4)]
    h = x
    for k, w in enumerate(ws):
        h = b.relu(b.dense(h, b.const(w, name=f"w{k}")))
    return b.build(b.add(h, x)), ws


def _numpy(x, ws):
    h = x
    for w in ws:
        h = np.maximum(h @ w.T, 0)
    return h + x


def _hammer(run, inputs) -> list:
    """run(inputs[i]) for every i, RUNS per thread on THREADS threads started together;
    the (index, result) pairs in the order they finished."""
    start = threading.Barrier(THREADS)

    def worker(t: int):
        start.wait()
        return [(i, run(inputs[i])) for i in range(t * RUNS, (t + 1) * RUNS)]

    with cf.ThreadPoolExecutor(THREADS) as pool:
        return [r for f in [pool.submit(worker, t) for t in range(THREADS)] for r in f.result()]


def test_compiled_graph_runs_from_threads_match_single_threaded_runs(rng):
    g, ws = _chain(rng)
    cg = tefuse.build(g, "llvm")
    inputs = [rng.standard_normal((4, 64)).astype("float32") for _ in range(THREADS * RUNS)]
    reference = [cg.run(x)[0] for x in inputs]  # one thread
    np.testing.assert_allclose(reference[0], _numpy(inputs[0], ws), rtol=1e-4, atol=1e-5)
    results = _hammer(lambda x: cg.run(x)[0], inputs)
    wrong = [i for i, r in results if not np.array_equal(r, reference[i])]
    assert len(results) == THREADS * RUNS
    assert not wrong, f"{len(wrong)} of {len(results)} threaded runs differ from the single-threaded run"


def test_out_buffers_from_threads(rng):
    g, ws = _chain(rng)
    cg = tefuse.build(g, "llvm")
    inputs = [rng.standard_normal((4, 64)).astype("float32") for _ in range(THREADS * RUNS)]
    reference = [cg.run(x)[0] for x in inputs]

    def run(x):
        buf = np.empty((4, 64), np.float32)
        cg.run(x, out=[buf])
        return buf

    wrong = [i for i, r in _hammer(run, inputs) if not np.array_equal(r, reference[i])]
    assert not wrong, f"{len(wrong)} threaded runs with out= differ"


def test_profiled_graph_from_threads(rng):
    g1, ws = _chain(rng, batch=1)
    b = GraphBuilder()
    x = b.input("x", (3, 64))
    h = x
    for k, w in enumerate(ws):
        h = b.relu(b.dense(h, b.const(w, name=f"w{k}")))
    pg = tefuse.build({1: g1, 3: b.build(b.add(h, x))}, "llvm")
    inputs = [rng.standard_normal((1 + 2 * (i % 2), 64)).astype("float32") for i in range(THREADS * RUNS)]
    reference = [pg.run(x)[0] for x in inputs]
    np.testing.assert_allclose(reference[1], _numpy(inputs[1], ws), rtol=1e-4, atol=1e-5)
    wrong = [i for i, r in _hammer(lambda x: pg.run(x)[0], inputs) if not np.array_equal(r, reference[i])]
    assert not wrong, f"{len(wrong)} threaded ProfiledGraph runs differ"


def test_fusion_plan_executes_from_threads(rng):
    plan = FusionPlan(TensorDesc((1, 8, 12, 12)))
    conv = plan.add_conv(TensorDesc((8, 8, 3, 3)), padding=1)
    bias = plan.add_bias()
    plan.add_activation("relu")
    plan.compile("llvm")
    args = plan.new_args()
    args.set_conv(conv, rng.standard_normal((8, 8, 3, 3)).astype("float32"))
    args.set_bias(bias, rng.standard_normal(8).astype("float32"))
    inputs = [rng.standard_normal((1, 8, 12, 12)).astype("float32") for _ in range(THREADS * RUNS)]
    reference = [plan.execute(x, args) for x in inputs]
    wrong = [i for i, r in _hammer(lambda x: plan.execute(x, args), inputs) if not np.array_equal(r, reference[i])]
    assert not wrong, f"{len(wrong)} threaded FusionPlan.execute results differ"


def test_a_single_thread_reuses_one_buffer_set(rng):
    """No allocation per run on one thread: the second run writes the buffers the first did."""
    g, ws = _chain(rng)
    cg = tefuse.build(g, "llvm")
    x = rng.standard_normal((4, 64)).astype("float32")
    first = cg.run(x, as_numpy=False)[0]
    cg.run(x + 1, as_numpy=False)
    np.testing.assert_allclose(first.numpy(), _numpy(x + 1, ws), rtol=1e-4, atol=1e-5)
