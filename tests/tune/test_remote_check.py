"""Checking a candidate's outputs on the RPC server (tefuse/tune/remote_check.py), llvm on
loopback: the counting kernel calls as many elements different as `check_outputs`' rule does
(tolerances, NaN and infinity, integers, ragged sizes); through a server a right candidate
passes without its outputs copied back, a wrong one is a wrong result with check_outputs'
message."""
from __future__ import annotations

import contextlib

import ml_dtypes
import numpy as np
import pytest
import tvm
from tvm import te

from tefuse.tune.measure import (WRONG_RESULT, ArgSpec, BuildResult, RunOptions, RunSpec, check_kinds,
                                 output_scale, tolerance)
from tefuse.target import make_target
from tefuse.tune.remote_check import mismatch_counter
from tefuse.tune.rpc import RPCSlot, start_local_rpc


@pytest.fixture(autouse=True)
def _own_user_cache(tmp_path, monkeypatch):
    """The output checks' counters are kept in the user cache (paths.check_kernel_dir): each
    test its own, not the machine's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def _bounds(ref, rounding=None):
    """The counter's (atol, rtol) arguments for `ref`, as remote_check passes them."""
    rtol, atol = tolerance(str(ref.dtype), rounding)
    return atol * max(output_scale(ref), 1.0), rtol


def _numpy_count(got, ref, rounding=None):
    if got.dtype.kind in "iub":
        return int((got != ref).sum())
    atol, rtol = _bounds(ref, rounding)
    close = np.isclose(got.astype(np.float64), ref.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)
    return int((~close).sum())


def _pair(dtype, shape, rng, rounding=None):
    """(got, ref): integers off by one here and there; floats off by 0.9x and 1.1x the tolerance
    (its relative part on large values, its absolute part near zero), NaN in both or in one,
    infinities."""
    if dtype == "int32":
        ref = rng.integers(-5, 5, shape).astype(dtype)
        got = ref.copy()
        got.reshape(-1)[::97] += 1
        return got, ref
    np_dtype = getattr(ml_dtypes, dtype) if dtype == "bfloat16" else np.dtype(dtype)
    ref64 = rng.standard_normal(shape) * 10
    ref64.reshape(-1)[7::89] = 1e-3 * rng.standard_normal(ref64.reshape(-1)[7::89].shape)  # near zero
    ref = ref64.astype(np_dtype)
    r64 = ref.astype(np.float64)
    atol, rtol = _bounds(ref, rounding)
    bound = atol + rtol * np.abs(r64)
    got64 = r64.copy()
    flat, b = got64.reshape(-1), bound.reshape(-1)
    flat[1::53] += 0.9 * b[1::53]
    flat[2::61] -= 1.1 * b[2::61]
    flat[7::89] += np.where(np.arange(flat[7::89].size) % 2, 0.9, 1.1) * b[7::89]
    got = got64.astype(np_dtype)
    g, r = got.reshape(-1), ref.reshape(-1)
    r[3] = g[3] = np.nan  # NaN in both: equal
    g[4] = np.nan  # NaN in one
    r[5] = g[5] = np.inf
    g[6] = -np.inf
    r[8] = np.inf  # an infinite reference: close only to itself
    r[9], g[9] = -np.inf, np.inf
    return got, ref


@pytest.mark.parametrize("dtype,shape,rounding", [("float32", (3, 1000), None), ("float16", (7, 5, 33), None),
                                                  ("float64", (2, 777), None), ("bfloat16", (4, 300), None),
                                                  ("int32", (2049,), None), ("float32", (3, 1000), "float16")])
def test_the_counter_counts_what_check_outputs_calls_different(dtype, shape, rounding, rng):
    got, ref = _pair(dtype, shape, rng, rounding)
    want = _numpy_count(got, ref, rounding)
    assert want > 0
    count = mismatch_counter(dtype, len(shape), "llvm")["main"]
    dev = tvm.cpu()
    rows = -(-int(np.prod(shape)) // 1024)
    counts = [tvm.runtime.empty((rows,), "int32", dev) for _ in range(2)]
    t = lambda a: tvm.runtime.tensor(a, dev)  # noqa: E731
    count(t(got), t(ref), *_bounds(ref, rounding), counts[0])
    count(t(ref), t(ref), *_bounds(ref, rounding), counts[1])
    assert int(counts[0].numpy().sum()) == want
    assert int(counts[1].numpy().sum()) == 0


def test_one_counter_serves_every_shape_of_its_rank(rng):
    """The counter is built for a type and rank, not a shape: a tuning run compiles a few."""
    count = mismatch_counter("float32", 4, "llvm")["main"]
    dev = tvm.cpu()
    for shape in [(1, 3, 5, 7), (2, 64, 9, 9), (1, 1, 1, 2049)]:
        got, ref = _pair("float32", shape, rng)
        n = tvm.runtime.empty((-(-int(np.prod(shape)) // 1024),), "int32", dev)
        count(tvm.runtime.tensor(got, dev), tvm.runtime.tensor(ref, dev), *_bounds(ref), n)
        assert int(n.numpy().sum()) == _numpy_count(got, ref) > 0


def test_the_counter_builds_for_the_gpu_at_any_rank_without_the_simplifier_blowing_up():
    """Its indices are each divided out of the flat one: nested divisions by symbolic dims
    took the simplifier a minute at rank 4 (about 0.3 s now)."""
    import time

    for ndim in (0, 4, 6):
        t0 = time.perf_counter()
        mismatch_counter("float16", ndim, {"kind": "cuda", "arch": "sm_90"})
        assert time.perf_counter() - t0 < 20


def _library(tmp_path, name: str, add: float, shape: tuple = (4, 300)) -> str:
    x = te.placeholder(shape, "float32", "x")
    y = te.compute(shape, lambda i, j: x[i, j] + add, name="y")
    path = str(tmp_path / f"{name}.so")
    tvm.compile(te.create_prim_func([x, y]).with_attr("global_symbol", "main"), target="llvm").export_library(path)
    return path


@contextlib.contextmanager
def _loopback_slot(key: str):
    """An RPCSlot holding a session on a loopback server of its own."""
    rpc = start_local_rpc(key, with_tracker=False)
    try:
        slot = RPCSlot(RunOptions(repeat=1, min_repeat_ms=1), key, None, ("127.0.0.1", rpc.server_port))
        slot.acquire(10)
        try:
            yield slot
        finally:
            slot.close()
    finally:
        rpc.close()


def test_a_server_checks_the_outputs_where_they_are(tmp_path, monkeypatch):
    with _loopback_slot("tefuse-check") as slot:
        # the target as a task exports it (a TVM Map), as tuning hands it over
        spec = RunSpec("add", [ArgSpec((4, 300), "float32")], [ArgSpec((4, 300), "float32")],
                       target=make_target("llvm").export())
        ref = BuildResult(0, {}, _library(tmp_path, "ref", 1.0))
        copied = []
        numpy = tvm.runtime.Tensor.numpy
        monkeypatch.setattr(tvm.runtime.Tensor, "numpy",
                            lambda self: copied.append(tuple(self.shape)) or numpy(self))
        slot._reference(spec, "llvm", ref)  # the reference's outputs come back once
        copied.clear()
        right = slot.measure(spec, "llvm", BuildResult(1, {}, _library(tmp_path, "right", 1.0)), ref)
        assert right.ok and (4, 300) not in copied, copied
        assert slot._cache[("check", "add", 0, "llvm", ref.path)] is not None  # checked there, not here
        wrong = slot.measure(spec, "llvm", BuildResult(2, {}, _library(tmp_path, "wrong", 1.5)), ref)
        assert wrong.error == WRONG_RESULT
        assert wrong.error_msg.startswith("output 0: 1200 of 1200 elements differ"), wrong.error_msg


def test_a_server_checks_at_the_tolerance_of_what_the_kernel_computes_in(tmp_path):
    """0.005 off outputs of 1.1-2: a wrong result at float32's tolerance, a right one at
    float16's (a kernel computed through float16 values, RunSpec.rounding)."""
    with _loopback_slot("tefuse-rounding") as slot:
        ref = BuildResult(0, {}, _library(tmp_path, "ref", 1.0))
        off = _library(tmp_path, "off", 1.005)
        for rounding, ok in ((None, False), ("float16", True)):
            spec = RunSpec(f"add_{rounding}", [ArgSpec((4, 300), "float32")], [ArgSpec((4, 300), "float32")],
                           target=make_target("llvm").export(), rounding=rounding)
            res = slot.measure(spec, "llvm", BuildResult(1, {}, off), ref)
            assert res.ok == ok and (ok or res.error == WRONG_RESULT), (rounding, res.error_msg)
            assert slot._cache[("check", spec.key, 0, "llvm", ref.path)] is not None  # checked on the server


def test_a_slot_keeps_only_the_workloads_used_last_on_its_server(tmp_path, monkeypatch):
    """Inputs, reference outputs and output checks stay on the server for the KEPT_WORKLOADS
    used last; a workload let go is sent again when it comes back, and still measures right."""
    import tefuse.tune.rpc as R

    monkeypatch.setattr(R, "KEPT_WORKLOADS", 2)
    with _loopback_slot("tefuse-keep") as slot:
        ref = BuildResult(0, {}, _library(tmp_path, "ref", 1.0))
        specs = {w: RunSpec(w, [ArgSpec((4, 300), "float32")], [ArgSpec((4, 300), "float32")], target={"kind": "llvm"})
                 for w in ("w1", "w2", "w3")}
        for i, w in enumerate(["w1", "w2", "w3", "w1"]):
            res = slot.measure(specs[w], "llvm", BuildResult(i + 1, {}, _library(tmp_path, f"c{i}", 1.0)), ref)
            assert res.ok, res.error_msg
        assert {k[1] for k in slot._cache if k[0] != "lib"} == {"w3", "w1"}
        assert len([k for k in slot._cache if k[0] == "lib"]) == 1  # one counter for all three


def test_a_prepared_slot_loads_its_counter_before_the_first_workload_and_keeps_using_it(tmp_path):
    with _loopback_slot("tefuse-prepare") as slot:
        target = make_target("llvm").export()
        slot.warm("llvm")
        slot.prepare(check_kinds([RunSpec("add", [], [ArgSpec((4, 300), "float32")], target=target)]), "llvm")
        prepared = [k for k in slot._cache if k[0] == "lib"]
        assert len(prepared) == 1 and not [k for k in slot._cache if k[0] != "lib"]  # no workload readied yet
        spec = RunSpec("add", [ArgSpec((4, 300), "float32")], [ArgSpec((4, 300), "float32")], target=target)
        ref = BuildResult(0, {}, _library(tmp_path, "ref", 1.0))
        wrong = slot.measure(spec, "llvm", BuildResult(1, {}, _library(tmp_path, "wrong", 2.0)), ref)
        assert wrong.error == WRONG_RESULT  # checked there, by the prepared counter
        assert [k for k in slot._cache if k[0] == "lib"] == prepared


def _half_case(tmp_path):
    """The workload tests.tune.test_measure's half writer gets wrong (x + 1 over 64 x 1024) and
    its reference."""
    spec = RunSpec("half", [ArgSpec((64, 1024), "float32")], [ArgSpec((64, 1024), "float32")],
                   target=make_target("llvm").export())
    return spec, BuildResult(0, {}, _library(tmp_path, "ref", 1.0, (64, 1024)))


def test_a_server_poisons_the_outputs_so_rows_left_unwritten_are_caught(tmp_path):
    from tests.tune.test_measure import _half_writer

    with _loopback_slot("tefuse-poison") as slot:
        spec, ref = _half_case(tmp_path)
        half = slot.measure(spec, "llvm", BuildResult(1, {}, _half_writer(str(tmp_path / "half.so"))), ref)
        assert half.error == WRONG_RESULT, half
        assert [k for k in slot._cache if k[0] == "poison"] == [("poison", "half", 0, "llvm")]


def test_a_workloads_outputs_are_allocated_once_and_a_half_writer_after_a_right_candidate_is_caught(
        tmp_path, monkeypatch):
    """The candidates of a workload write into the same outputs on the server (no allocation and
    free a candidate); the poison still catches rows a kernel leaves unwritten, though the
    candidate before it wrote the right values there."""
    from tests.tune.test_measure import _half_writer

    with _loopback_slot("tefuse-outputs") as slot:
        spec, ref = _half_case(tmp_path)
        assert slot.measure(spec, "llvm", BuildResult(1, {}, ref.path), ref).ok
        allocated = []
        empty = tvm.runtime.empty
        monkeypatch.setattr(tvm.runtime, "empty", lambda *a, **kw: allocated.append(a[0]) or empty(*a, **kw))
        half = slot.measure(spec, "llvm", BuildResult(2, {}, _half_writer(str(tmp_path / "half.so"))), ref)
        assert half.error == WRONG_RESULT and "32768 of 65536 elements differ" in half.error_msg, half
        assert allocated == []  # the first candidate's outputs, written again


def test_a_slot_lets_workloads_go_past_its_byte_budget_but_never_the_one_in_use(tmp_path, monkeypatch):
    import tefuse.tune.rpc as R

    spec = lambda w: RunSpec(w, [ArgSpec((4, 300), "float32")], [ArgSpec((4, 300), "float32")],  # noqa: E731
                             target={"kind": "llvm"})
    assert R.kept_bytes(spec("w")) == 4 * 1200 * 4  # the inputs once, the outputs three times
    monkeypatch.setattr(R, "KEPT_BYTES", 2 * R.kept_bytes(spec("w")))
    with _loopback_slot("tefuse-bytes") as slot:
        ref = BuildResult(0, {}, _library(tmp_path, "ref", 1.0))
        for i, w in enumerate(["w1", "w2", "w3"]):
            assert slot.measure(spec(w), "llvm", BuildResult(i + 1, {}, _library(tmp_path, f"c{i}", 1.0)), ref).ok
        assert {k[1] for k in slot._cache if k[0] != "lib"} == {"w2", "w3"}
        monkeypatch.setattr(R, "KEPT_BYTES", 1)  # less than one workload: the one in use stays
        assert slot.measure(spec("w1"), "llvm", BuildResult(9, {}, _library(tmp_path, "c9", 1.0)), ref).ok
        assert {k[1] for k in slot._cache if k[0] != "lib"} == {"w1"}
        kept = slot._cache[("in", "w1", 0, "llvm")]
        assert slot.measure(spec("w1"), "llvm", BuildResult(10, {}, _library(tmp_path, "c10", 1.0)), ref).ok
        assert slot._cache[("in", "w1", 0, "llvm")] is kept  # not let go and sent again


def test_what_a_dropped_session_made_is_not_kept_for_the_next_one(tmp_path, monkeypatch):
    """A call that timed out keeps running on an abandoned thread; what it makes after the slot
    took a new session holds the old session's handles, and is not cached."""
    with _loopback_slot("tefuse-stale") as slot:
        spec = RunSpec("w", [ArgSpec((4, 300), "float32")], [ArgSpec((4, 300), "float32")], target={"kind": "llvm"})
        made = slot._outputs(spec, "llvm")
        assert slot._cache[("out", "w", 0, "llvm")] is made  # kept while its session is the slot's
        slot._forget()
        first, remote_dev = slot.sess, slot._remote_dev

        def swapped(kind):  # the slot drops the session and takes another while this call runs
            dev = remote_dev(kind)
            slot.sess = object()
            return dev

        monkeypatch.setattr(slot, "_remote_dev", swapped)
        assert len(slot._outputs(spec, "llvm")) == 1
        assert ("out", "w", 0, "llvm") not in slot._cache
        slot.sess = first


def test_a_reference_run_and_its_check_made_on_a_dropped_session_are_not_kept(tmp_path, monkeypatch):
    """The reference's outputs and the output check are cached per session like the inputs: an
    abandoned call that finishes them after the slot took a new session keeps neither."""
    with _loopback_slot("tefuse-stale-ref") as slot:
        spec, ref = _half_case(tmp_path)
        first, load = slot.sess, slot._load
        import tefuse.tune.rpc as R

        def swapping(make):  # what `make` makes, then the slot takes another session, as a timed-out call's
            def call(*a):
                made = make(*a)
                monkeypatch.setattr(slot, "sess", object())
                return made
            return call

        monkeypatch.setattr(slot, "_load", swapping(load))
        here, there = slot._reference(spec, "llvm", ref)
        np.testing.assert_allclose(here[0], spec.inputs()[0] + 1.0)  # the caller still gets its run
        assert not [k for k in slot._cache if k[0] == "ref"]
        monkeypatch.setattr(slot, "sess", first)
        monkeypatch.setattr(slot, "_load", load)
        monkeypatch.setattr(R, "remote_check", swapping(R.remote_check))
        assert slot._checker(spec, "llvm", (here, there), ref) is not None
        assert not [k for k in slot._cache if k[0] == "check"]
        monkeypatch.undo()  # the slot's own session and check again
        assert slot._checker(spec, "llvm", (here, there), ref) is not None
        assert [k[0] for k in slot._cache if k[0] in ("ref", "check")] == ["check"]
