"""Whole-graph builds: kernels compiled in parallel threads give the serial build's kernels."""
import importlib
import logging

import numpy as np
import pytest

import tefuse
from tefuse.driver import VERBOSE
from tefuse.errors import BuildError
from tefuse.graph.ir import GraphBuilder

import tefuse.codegen.compile as C  # noqa: E402
import tefuse.driver as B  # noqa: E402


def _mlp():
    """dense+relu -> dense+bias -> softmax -> sum: four groups, each depending on the last."""
    b = GraphBuilder()
    x = b.input("x", (4, 16))
    w1, w2 = b.input("w1", (32, 16)), b.input("w2", (8, 32))
    bias = b.input("bias", (8,))
    h = b.relu(b.dense(x, w1))
    y = b.softmax(b.add(b.dense(h, w2), bias))
    return b.build([y, b.reduce_sum(y, axes=(1,))])


def _inputs(rng):
    return {"x": rng.standard_normal((4, 16)), "w1": rng.standard_normal((32, 16)) / 4,
            "w2": rng.standard_normal((8, 32)) / 4, "bias": rng.standard_normal(8)}


def _reference(x, w1, w2, bias):
    z = np.maximum(x @ w1.T, 0) @ w2.T + bias
    e = np.exp(z - z.max(axis=1, keepdims=True))
    y = e / e.sum(axis=1, keepdims=True)
    return y, y.sum(axis=1)


@pytest.mark.parametrize("jobs", [1, 3])
def test_parallel_build_matches_serial_and_numpy(jobs, rng):
    serial = tefuse.build(_mlp(), "llvm", jobs=1)
    cg = tefuse.build(_mlp(), "llvm", jobs=jobs)
    assert cg.num_kernels == serial.num_kernels >= 3
    assert [k.group.name for k in cg.kernels] == [k.group.name for k in serial.kernels]
    assert [k.tir for k in cg.kernels] == [k.tir for k in serial.kernels]
    feeds = {k: v.astype("float32") for k, v in _inputs(rng).items()}
    got = cg.run(**feeds)
    for g, want in zip(got, _reference(**{k: v.astype("float64") for k, v in feeds.items()})):
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)


def test_parallel_cuda_build_gives_the_serial_source():
    serial = tefuse.build(_mlp(), "cuda", jobs=1)
    par = tefuse.build(_mlp(), "cuda", jobs=4)
    assert [k.source("cuda") for k in par.kernels] == [k.source("cuda") for k in serial.kernels]


def test_parallel_build_logs_progress_for_every_kernel(caplog):
    """Per kernel at VERBOSE (`tefuse -v`), one INFO line for the build; progress() per kernel."""
    calls = []
    with caplog.at_level(VERBOSE, logger="tefuse.driver"):
        cg = tefuse.build(_mlp(), "llvm", jobs=2, progress=lambda done, total: calls.append((done, total)))
    n = cg.num_kernels
    built = [r for r in caplog.records if "] built " in r.getMessage()]
    assert sorted(r.getMessage().split("]")[0] for r in built) == sorted(f"[{k}/{n}" for k in range(1, n + 1))
    assert {r.levelno for r in built} == {VERBOSE}
    info = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert len(info) == 1 and info[0].startswith(f"built {n} kernels for ") and "fallback configs" in info[0]
    assert sorted(calls) == [(k, n) for k in range(1, n + 1)]


def test_a_failing_group_names_itself_in_a_parallel_build(monkeypatch):
    real = C.device_compile

    def flaky(mod, target, pass_config=None):
        if "softmax" in mod.script():
            raise RuntimeError("InternalError: something deep in TVM\nlast line: bad softmax")
        return real(mod, target, pass_config)

    monkeypatch.setattr(C, "device_compile", flaky)
    with pytest.raises(BuildError, match=r"group g\d+_\w*softmax\w*: compiling for llvm failed: last line: bad softmax"):
        tefuse.build(_mlp(), "llvm", jobs=3)


def test_a_device_compiler_failure_names_its_first_errors(monkeypatch):
    """nvcc ends with a count ("2 errors detected"); the line also carries the first errors."""
    def nvcc_like(mod, target, pass_config=None):
        raise RuntimeError("Compilation error:\nk.cu(3): error: identifier \"x_ptr\" is undefined\n"
                           "k.cu(9): error: expected a \")\"\nk.cu(12): error: third\n"
                           "3 errors detected in the compilation of \"k.cu\".")

    monkeypatch.setattr(C, "device_compile", nvcc_like)
    with pytest.raises(BuildError) as e:
        tefuse.build(_mlp(), "llvm", jobs=1)
    msg = str(e.value)
    assert "\n" not in msg and "3 errors detected" in msg
    assert 'identifier "x_ptr" is undefined' in msg and "expected a" in msg and "third" not in msg


def test_build_jobs_from_environment(monkeypatch):
    monkeypatch.setenv("TEFUSE_BUILD_JOBS", "3")
    assert B.default_jobs() == 3
    monkeypatch.setenv("TEFUSE_BUILD_JOBS", "many")
    with pytest.raises(BuildError, match="TEFUSE_BUILD_JOBS='many'"):
        B.default_jobs()
    monkeypatch.delenv("TEFUSE_BUILD_JOBS")
    assert B.default_jobs() >= 1


def test_schedule_jobs_are_capped_below_the_compiles(monkeypatch):
    monkeypatch.delenv("TEFUSE_SCHEDULE_JOBS", raising=False)
    assert B.schedule_jobs(16) == B.MAX_SCHEDULE_JOBS < 16
    assert B.schedule_jobs(1) == 1  # jobs=1 builds one kernel at a time, scheduling too
    monkeypatch.setenv("TEFUSE_SCHEDULE_JOBS", "7")
    assert B.schedule_jobs(16) == 7 and B.schedule_jobs(2) == 2
    monkeypatch.setenv("TEFUSE_SCHEDULE_JOBS", "0")
    with pytest.raises(BuildError, match="TEFUSE_SCHEDULE_JOBS='0'"):
        B.schedule_jobs(4)


def test_scheduling_runs_on_schedule_jobs_threads(monkeypatch):
    """Eight items, the cap at 2: no more than two run at once."""
    import threading
    import time

    monkeypatch.setenv("TEFUSE_SCHEDULE_JOBS", "2")
    running, peak, lock = [0], [0], threading.Lock()

    def fn(x):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.05)
        with lock:
            running[0] -= 1
        return x * x

    out = B.map_in_threads(fn, list(range(8)), 8)
    assert [r for r, _ in out] == [x * x for x in range(8)] and peak[0] == 2


def test_a_failure_cancels_kernels_not_started(monkeypatch):
    """Two jobs, four kernels: the first fails at once and the others take 0.3 s, so by the time a
    thread is free again the failure has been seen and the last kernel must never compile
    (without cancellation all four would)."""
    import time

    calls = []

    def device_compile(mod, target, pass_config=None):
        calls.append(mod)
        if len(calls) == 1:
            raise RuntimeError("nvcc: out of memory")
        time.sleep(0.3)
        raise RuntimeError("should not matter")

    monkeypatch.setattr(C, "device_compile", device_compile)
    target = B.make_target("llvm")
    preps = [B.prepare_group(g, target) for g in tefuse.fuse_graph(_mlp())]
    assert len(preps) == 4
    with pytest.raises(BuildError, match="out of memory"):
        B.compile_groups(preps, target, jobs=2)
    assert 2 <= len(calls) <= 3  # 2 when the queue is cancelled before a freed thread takes kernel 3


def test_default_jobs_is_capped(monkeypatch):
    monkeypatch.delenv("TEFUSE_BUILD_JOBS", raising=False)
    monkeypatch.setattr(B.os, "sched_getaffinity", lambda pid: set(range(500)), raising=False)
    assert B.default_jobs() == B.MAX_DEFAULT_JOBS


def test_the_first_failing_group_in_graph_order_is_reported(monkeypatch):
    """Kernel 2 fails at once, kernel 1 a little later: the error names kernel 1 all the same."""
    import time

    target = B.make_target("llvm")
    preps = [B.prepare_group(g, target) for g in tefuse.fuse_graph(_mlp())]
    first, second = preps[0].mod, preps[1].mod

    def device_compile(mod, target, pass_config=None):
        if mod is first:
            time.sleep(0.3)
            raise RuntimeError("first group broke")
        if mod is second:
            raise RuntimeError("second group broke")
        return real(mod, target, pass_config)

    real = C.device_compile
    monkeypatch.setattr(C, "device_compile", device_compile)
    with pytest.raises(BuildError, match=f"group {preps[0].group.name}: .*first group broke"):
        B.compile_groups(preps, target, jobs=4)


def test_identical_groups_compile_once_and_share_the_module(monkeypatch, rng):
    """Four identical dense+relu blocks (as a ResNet repeats its blocks): one compile."""
    b = GraphBuilder()
    h = x = b.input("x", (4, 16))
    ws = [rng.standard_normal((16, 16)).astype("float32") / 4 for _ in range(4)]
    for k, w in enumerate(ws):
        h = b.relu(b.dense(h, b.const(w, name=f"w{k}")))
    calls = []
    real = C.device_compile
    monkeypatch.setattr(C, "device_compile", lambda mod, target, pass_config=None: calls.append(1) or real(mod, target, pass_config))
    cg = tefuse.build(b.build(h), "llvm", jobs=2)
    assert cg.num_kernels == 4 and len(calls) == 1
    assert len({id(k.module) for k in cg.kernels}) == 1
    assert len({id(k.group) for k in cg.kernels}) == 4
    xv = rng.standard_normal((4, 16)).astype("float32")
    want = xv.astype("float64")
    for w in ws:
        want = np.maximum(want @ w.T, 0)
    np.testing.assert_allclose(cg.run(xv)[0], want, rtol=1e-5, atol=1e-6)


def test_jobs_below_one_is_a_clear_error():
    with pytest.raises(BuildError, match="jobs must be at least 1, got 0"):
        tefuse.build(_mlp(), "llvm", jobs=0)


def test_kernel_dump_forces_one_job(monkeypatch, caplog):
    monkeypatch.setenv("TVM_KERNEL_DUMP", "/tmp/tefuse-kernel-dump")
    with caplog.at_level(logging.INFO, logger="tefuse.driver"):
        tefuse.build(_mlp(), "cuda", jobs=4)
    assert any("compiling one at a time" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("tag,extent,ok", [("blockIdx.y", 65535, True), ("blockIdx.y", 65536, False),
                                           ("blockIdx.z", 70000, False), ("blockIdx.x", 70000, True)])
def test_a_grid_past_cudas_limits_is_refused_by_name(tag, extent, ok):
    """blockIdx.y and z stop at 65535 on CUDA: such a launch fails at run time, so the schedule is
    refused before compiling, with the axis and the count."""
    from tvm import s_tir, te

    from tefuse.target import make_target

    x = te.placeholder((extent, 32), "float32", name="x")
    y = te.compute((extent, 32), lambda i, j: x[i, j] * 2, name="y")
    sch = s_tir.Schedule(te.create_prim_func([x, y]))
    i, j = sch.get_loops(sch.get_sblock("y"))
    sch.bind(i, tag)
    sch.bind(j, "threadIdx.x")
    if ok:
        C.check_limits(sch.mod, make_target("cuda"))
    else:
        with pytest.raises(BuildError, match=rf"^{extent} blocks along {tag} > CUDA's 65535$"):
            C.check_limits(sch.mod, make_target("cuda"))


def test_a_kernel_whose_buffers_do_not_compact_is_a_build_error_line(monkeypatch):
    """TVM's buffer compaction raising (a region sized by run-time dims it cannot bound) is a
    BuildError naming the group, which the driver handles as any other, not a TVM stack."""
    def fails(mod):
        raise ValueError("Traceback (most recent call last):\n  ...\nValueError: Literal value 4611686018427387904 "
                         "exceeds range of int32")

    monkeypatch.setattr(C, "compacted_script", fails)
    b = GraphBuilder()
    g = b.build(b.relu(b.input("x", (4, 64))))
    with pytest.raises(BuildError) as e:
        tefuse.build(g, "cuda:sm_90")
    msg = str(e.value)
    assert "g0_relu" in msg and "do not compact" in msg and "exceeds range of int32" in msg
    assert "\n" not in msg and "Traceback" not in msg


def test_a_kernel_tvms_cse_breaks_is_compiled_again_without_it(monkeypatch):
    """TVM's CSE on some Let-bound loads uses a variable before defining it: the kernel compiles
    again with the pass off; any other failure, or one with the pass already off, is raised."""
    real, seen = C._tvm_compile, []

    def flaky(mod, target, pipeline, config):
        seen.append(bool(config.get("tirx.disable_cse_tir")))
        if not config.get("tirx.disable_cse_tir"):
            raise RuntimeError("Check failed: (!use_count_.count(v)) is false: variable cse_v2 has been used "
                               "before definition!")
        return real(mod, target, pipeline, config)

    monkeypatch.setattr(C, "_tvm_compile", flaky)
    b = GraphBuilder()
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    cg = tefuse.build(b.build(b.relu(b.input("x", (2, 4)))), "llvm", cache=None)
    np.testing.assert_array_equal(cg.run(x)[0], x)
    assert seen == [False, True]

    def broken(mod, target, pipeline, config):
        raise RuntimeError("variable cse_v2 has been used before definition!")

    monkeypatch.setattr(C, "_tvm_compile", broken)
    b = GraphBuilder()
    with pytest.raises(BuildError, match="used before definition"):
        tefuse.build(b.build(b.relu(b.input("x", (2, 5)))), "llvm", cache=None)
