"""Builder and runner on the llvm target: errors become records, wrong results never win,
and tune() logs one record per measurement and resumes from its log."""
from __future__ import annotations

import math
import os

import numpy as np
import pytest

from tefuse import GraphBuilder
from tefuse.codegen.compile import compile_module
from tefuse.plan.spec import parse_chain
from tefuse.codegen.lower import lower_group
from tefuse.codegen.schedule import ScheduleChoice, apply_schedule
from tefuse.fusion import fuse_graph
from tefuse.tune.builder import LocalBuilder
from tefuse.tune.database import Database
from tefuse.tune.measure import BuildResult, check_outputs, run_spec
from tefuse.tune.record import TuningRecord
from tefuse.tune.runner import LocalRunner
from tefuse.schedules.space import Config
from tefuse.tune.task import extract_tasks
from tefuse.tune.loop import tune


def conv_relu(relu: bool = True, c: int = 8, hw: int = 12):
    b = GraphBuilder()
    x = b.input("x", (1, c, hw, hw))
    y = b.conv2d(x, b.const(np.random.default_rng(0).standard_normal((c, c, 3, 3)).astype("float32")),
                 padding=1)
    y = b.relu(y) if relu else b.sigmoid(y)
    return b.build(y)


@pytest.fixture(scope="module")
def builder():
    with LocalBuilder(n_parallel=2, timeout=60) as b:
        yield b


@pytest.fixture(scope="module")
def runner():
    with LocalRunner(min_repeat_ms=1, repeat=2, timeout=60) as r:
        yield r


def test_extract_tasks_dedups_workloads():
    b = GraphBuilder()
    x = b.input("x", (1, 4, 8, 8))
    w = np.ones((4, 4, 3, 3), "float32")
    y = b.relu(b.conv2d(x, b.const(w), padding=1))
    y = b.relu(b.conv2d(y, b.const(w), padding=1))  # same workload as the first
    tasks = extract_tasks(b.build(y), "llvm")
    assert len(tasks) == 1 and tasks[0].weight == 2
    t = tasks[0]
    assert t.info.anchor_kind == "conv2d" and len(t.space()) >= 8
    assert t.fallback().index in range(len(t.space()))


def test_build_workers_run_nicer_than_the_tuner(builder):
    import psutil

    from tefuse.tune.builder import BUILD_NICENESS

    builder.warm("llvm")
    workers = [int(n) for n in os.listdir(os.path.join(builder.workdir, "workers"))]
    assert workers and all(psutil.Process(p).nice() == os.nice(0) + BUILD_NICENESS for p in workers)


def test_builder_captures_compile_errors(builder):
    task = extract_tasks(conv_relu(), "llvm")[0]
    good = task.space().get(0)
    res = builder.build(task, "no_such_template", [good])
    assert res[0].error == "compile_error" and "no_such_template" in res[0].error_msg
    # a config the template cannot apply (a knob missing: e.g. a log of an older space)
    bad = Config(1, {k: v for k, v in good.values.items() if k != "parallel_loops"})
    res = builder.build(task, task.template().name, [bad, good])
    assert res[0].error == "compile_error" and res[0].path is None
    assert res[1].ok and os.path.exists(res[1].path)


def test_builder_rejects_oversized_thread_blocks_for_cuda(builder):
    task = extract_tasks(conv_relu(c=64, hw=8), "cuda")[0]
    space = task.space()
    fb = task.fallback()
    vals = dict(fb.values)
    for k in range(3):  # the most threads each dim allows: 32 x 8 x 8 = 2048 > 1024
        vals[f"tile_{k}"] = max(space.knobs[k].candidates, key=lambda c: (c[2], -c[1], -c[3]))
    res = builder.build(task, task.template().name, [space.from_values(vals)])
    assert res[0].error == "compile_error" and "threads per block" in res[0].error_msg


def _wrong_kernel(tmp_path) -> str:
    """Same signature as conv_relu's kernel, other maths (sigmoid): a miscompiled candidate."""
    g = fuse_graph(conv_relu(relu=False))[0]
    lw = lower_group(g)
    t = extract_tasks(conv_relu(relu=False), "llvm")[0]
    mod = apply_schedule(lw, t.target, ScheduleChoice(t.template(), t.fallback(), "fallback"))
    path = str(tmp_path / "wrong.so")
    compile_module(mod, t.target).export_library(path)
    return path


def test_runner_flags_wrong_results_and_they_never_become_best(builder, runner, tmp_path):
    task = extract_tasks(conv_relu(), "llvm")[0]
    ref, good = builder.build(task, task.template().name, [task.fallback(), task.space().get(3)])
    wrong = BuildResult(5, task.space().get(5).to_json(), _wrong_kernel(tmp_path))
    broken = BuildResult(6, task.space().get(6).to_json(), str(tmp_path / "missing.so"))
    spec = run_spec(task)
    res = runner.run(spec, "llvm", [good, wrong, broken], reference=ref)
    assert res[0].ok and res[0].cost > 0 and len(res[0].costs) == 2
    assert res[1].error == "wrong_result" and math.isinf(res[1].cost)
    assert res[2].error == "runtime_error"
    # in the log, the wrong result claims to be faster: it must still not win
    db = Database(tmp_path / "log.jsonl")
    for r, costs in ((res[0], res[0].costs), (res[1], [1e-9])):
        db.append(TuningRecord(task.workload, task.target_key, "cpu", task.template().name, r.config,
                               r.index, costs, r.error, r.error_msg))
    assert db.best(task.workload, task.target_key).config_index == 3


def test_check_outputs_tolerances():
    ref = [np.linspace(-1, 1, 100).astype("float32")]
    assert check_outputs([ref[0] + 1e-6], ref) is None
    assert "differ" in check_outputs([ref[0] + 0.1], ref)
    assert check_outputs([np.array([1, 2], "int32")], [np.array([1, 3], "int32")]) is not None


def test_an_output_computed_through_float16_is_checked_at_float16s_tolerance():
    """BERT's residual adds in float16, cast to float32: two summation orders differ by float16
    ulps, which float32's tolerance called a wrong result; a real error still is one. The
    rounding is what the kernel computes in, not what it reads: float16 inputs cast to float32
    and multiplied there keep float32's tolerance."""
    from tefuse.tune.measure import rounding_of

    def group(product_dtype):
        b = GraphBuilder()
        x, w = b.input("x", (4, 8), "float16"), b.input("w", (8, 8), product_dtype)
        y = b.dense(x if product_dtype == "float16" else b.cast(x, dtype="float32"), w)
        (g,) = fuse_graph(b.build(b.cast(b.add(y, b.input("r", (4, 8), product_dtype)), dtype="float32")))
        return g

    assert rounding_of(group("float16")) == "float16"
    assert rounding_of(group("float32")) == "float32"
    ref = [np.float16(np.linspace(1, 2, 64)).astype("float32")]
    ulps = [ref[0] + np.float32(2 * 2.0 ** -10)]  # two float16 ulps: 1e-3 of 1.4
    assert "differ" in check_outputs(ulps, ref)
    assert check_outputs(ulps, ref, "float16") is None
    assert "differ" in check_outputs([ref[0] * 1.05], ref, "float16")


def test_tune_end_to_end_writes_records_and_resumes(builder, runner, tmp_path):
    log = tmp_path / "tune.jsonl"
    g = conv_relu()
    res = tune(g, "llvm", trials=8, tuner="xgb", log=str(log), builder=builder, runner=runner, seed=1)
    assert len(res) == 1 and res[0].measured == 8 and res[0].resumed == 0
    db = Database(log)
    recs = db.records()
    assert len(recs) == 8 and len({r.config_index for r in recs}) == 8
    assert all(r.ok for r in recs), [r.error_msg for r in recs if not r.ok]
    best = db.best(res[0].task.workload, "llvm")
    assert best is not None and best.config_index == res[0].best_index
    # same budget again: everything is in the log, nothing is measured
    again = tune(g, "llvm", trials=8, tuner="xgb", log=str(log), builder=builder, runner=runner, seed=1)
    assert again[0].measured == 0 and again[0].resumed == 8
    assert len(Database(log).records()) == 8
    # a larger budget measures only the difference, never a config twice
    more = tune(g, "llvm", trials=12, tuner="random", log=str(log), builder=builder, runner=runner)
    assert more[0].measured == 4
    recs = Database(log).records()
    assert len(recs) == 12 and len({r.config_index for r in recs}) == 12


def test_tune_early_stopping(builder, runner, tmp_path):
    res = tune(conv_relu(), "llvm", trials=16, tuner="grid", log=str(tmp_path / "l.jsonl"),
               builder=builder, runner=runner, early_stopping=1)
    assert 2 <= res[0].measured < 16


def test_builder_rejects_oversized_shared_memory_for_cuda(builder):
    # 16 output channels x 32 x 32 outputs a block, all 16 input channels staged at once:
    # about 77 KiB of shared tiles, more than the 48 KiB a block may have
    task = extract_tasks(parse_chain("conv2d(k=16,r=3,pad=1)+relu", (1, 16, 32, 32)), "cuda")[0]
    space = task.space("conv2d_direct")
    cfg = space.from_values({"tile_0": (2, 2, 4, 1), "tile_1": (1, 4, 1, 8), "tile_2": (1, 4, 8, 1),
                             "tile_rc": (1, 16), "unroll": 0, "unroll_explicit": 0})
    res = builder.build(task, "conv2d_direct", [cfg, task.fallback("conv2d_direct")])
    assert res[0].error == "compile_error" and "bytes of shared memory per block > 49152" in res[0].error_msg
    assert res[1].ok


def test_a_bfloat16_outputs_tolerance_is_relative_to_its_largest_value():
    """ml_dtypes' bfloat16 is numpy kind "V": its absolute tolerance still scales with the
    reference's largest value, as a float's does."""
    import ml_dtypes

    from tefuse.tune.measure import check_outputs, output_scale

    ref = np.array([700.0, 0.05], ml_dtypes.bfloat16)
    assert output_scale(ref) == 700.0
    assert check_outputs([np.array([700.0, 0.1], ml_dtypes.bfloat16)], [ref]) is None
    assert check_outputs([np.array([700.0, 20.0], ml_dtypes.bfloat16)], [ref]) is not None


def _half_writer(path: str) -> str:
    """A kernel of y = x + 1 over (64, 1024) that writes only the first 32 rows."""
    import tvm
    from tvm.script import tirx as T

    @T.prim_func
    def main(x: T.Buffer((64, 1024), "float32"), y: T.Buffer((64, 1024), "float32")):
        T.func_attr({"global_symbol": "main"})
        for i, j in T.grid(32, 1024):
            y[i, j] = x[i, j] + T.float32(1)

    tvm.compile(main, target="llvm").export_library(path)
    return path


def test_an_output_left_partly_unwritten_is_wrong_even_where_its_memory_holds_the_right_values(tmp_path):
    """Device memory handed out again keeps the last candidate's outputs: the outputs are
    poisoned before the checked run, so the rows a kernel leaves unwritten are caught."""
    import tvm

    from tefuse.tune.measure import WRONG_RESULT, ArgSpec, RunOptions, measure_module, poison_tensors

    dev = tvm.cpu()
    x = np.random.default_rng(0).standard_normal((64, 1024)).astype(np.float32)
    right = x + 1
    specs = [ArgSpec((64, 1024), "float32")]
    stale = lambda: [tvm.runtime.tensor(right, dev)]  # outputs holding what the last right candidate left
    half = _half_writer(str(tmp_path / "half.so"))
    args = (lambda: tvm.runtime.load_module(half), dev, [tvm.runtime.tensor(x, dev)], specs, [right],
            RunOptions(repeat=1, min_repeat_ms=1), 0, {})
    res = measure_module(*args, outputs=stale(), poison=poison_tensors(specs, dev))
    assert res.error == WRONG_RESULT and "32768 of 65536 elements differ" in res.error_msg, res
    assert measure_module(*args, outputs=stale()).ok  # unpoisoned, the stale rows pass: the hole it closes


@pytest.mark.parametrize("dtype,value", [("float32", "nan"), ("float16", "nan"), ("bfloat16", "nan"),
                                         ("int8", -128), ("int32", -(2 ** 31)), ("uint8", 255), ("bool", True),
                                         ("int4", -8), ("uint4", 15), ("float8_e4m3fn", "nan")])
def test_poisoned_outputs_hold_a_value_no_right_answer_is_taken_for(dtype, value):
    from tefuse.tune.measure import ArgSpec, poisoned

    (a,) = poisoned([ArgSpec((2, 3), dtype)])
    assert a.shape == (2, 3) and str(a.dtype) == dtype
    if value == "nan":
        assert np.isnan(a.astype(np.float32)).all()
    else:
        assert (a == value).all()


def test_the_local_runner_poisons_the_outputs_of_a_checked_run(monkeypatch):
    import tefuse.tune.runner as R
    from tefuse.tune.measure import ArgSpec, BuildResult, MeasureResult, RunOptions, RunSpec

    seen = []
    monkeypatch.setattr(R, "measure_module", lambda *a, **kw: seen.append(kw) or MeasureResult(0, {}))
    monkeypatch.setattr(R, "_reference", lambda spec, kind, path: [np.zeros((2, 3), np.float32)])
    spec = RunSpec("poisoned", [ArgSpec((2, 3), "float32")], [ArgSpec((2, 3), "float32")], rounding="float16")
    R.run_one(spec, "llvm", BuildResult(1, {}, "unused.so"), "ref.so", RunOptions())
    (kw,) = seen
    assert len(kw["poison"]) == 1 and np.isnan(kw["poison"][0].numpy()).all()
    assert kw["rounding"] == "float16"  # the check's tolerance goes with it
