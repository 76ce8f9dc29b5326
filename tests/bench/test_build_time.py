"""The cold-build bench (tefuse/bench/build_time.py): a child process builds a model and reports
its phases, which add up to no more than its whole life; a model that fails to build is reported
with its error line, not a crash; `tefuse.build` records the same phases on the graph it returns."""
from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import tefuse
from tefuse.bench import build_time as B


def _conv_model(path, bad=False):
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype("float32"), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("NonZero" if bad else "Relu", ["c"], ["y"], name="act")]
    g = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.INT64, [4, "n"]) if bad
                           else helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
                          [w])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


def test_a_child_reports_its_phases(tmp_path):
    r = B.measure("tiny", _conv_model(tmp_path / "m.onnx"), "llvm", "fp32", jobs=1)
    assert r.status == "ok", r.status
    assert r.kernels == 1 and r.compiled == 1
    phases = [r.import_s, r.onnx_s, r.graph_s, r.schedule_s, r.compile_s]
    assert all(s >= 0 for s in phases) and r.compile_s > 0
    assert sum(phases) <= r.wall_s
    assert "1 kernels, 1 compiled" in B.result_line(r)


def test_a_failed_build_is_its_error_line(tmp_path):
    r = B.measure("tiny", _conv_model(tmp_path / "bad.onnx", bad=True), "llvm", "fp32", jobs=1)
    assert r.status != "ok" and "NonZero" in r.status and "Traceback" not in r.status


def test_build_records_its_phases():
    b = tefuse.GraphBuilder()
    g = b.build(b.relu(b.input("x", (2, 3))))
    bt = tefuse.build(g, "llvm").build_times
    assert bt.kernels == 1 and bt.compiled == 1 and min(bt.graph_s, bt.schedule_s, bt.compile_s) >= 0


def test_merged_reports_keep_each_rows_command_and_the_latest_row(tmp_path):
    """A re-measured (model, precision) replaces its row, every other row stays with the command
    that measured it; a merge without --json, or of runs on different setups, is refused."""
    def row(model, wall):
        return {"model": model, "precision": "fp16", "status": "ok", "wall_s": wall}

    first = {"command": "run all", "cpus": 16, "results": [row("resnet50", 25.7), row("densenet121", 39.9)]}
    second = {"command": "run densenet", "cpus": 16, "results": [row("densenet121", 30.4)]}
    paths = []
    for k, report in enumerate((first, second)):
        paths.append(tmp_path / f"r{k}.json")
        paths[-1].write_text(json.dumps(report))
    out = tmp_path / "merged.json"
    assert B.main(["--merge", *map(str, paths), "--json", str(out)]) == 0
    merged = json.loads(out.read_text())
    assert merged["commands"] == ["run all", "run densenet"] and merged["cpus"] == 16
    assert [(r["model"], r["wall_s"], r["command"]) for r in merged["results"]] == [
        ("resnet50", 25.7, "run all"), ("densenet121", 30.4, "run densenet")]
    with pytest.raises(SystemExit):
        B.main(["--merge", str(paths[0])])
    paths[1].write_text(json.dumps({**second, "cpus": 32}))  # another machine: not one table
    with pytest.raises(SystemExit):
        B.main(["--merge", *map(str, paths), "--json", str(out)])


def test_a_child_schedules_on_the_threads_it_is_given(tmp_path, monkeypatch):
    """measure(..., schedule_threads=N) runs the child under TEFUSE_SCHEDULE_JOBS=N and marks the
    row with it; a bad count is refused before any model is built."""
    seen = []
    real = B.subprocess.run

    def run(cmd, **kw):
        seen.append(kw["env"].get("TEFUSE_SCHEDULE_JOBS"))
        return real(cmd, **kw)

    monkeypatch.setattr(B.subprocess, "run", run)
    r = B.measure("tiny", _conv_model(tmp_path / "m.onnx"), "llvm", "fp32", jobs=1, schedule_threads=3)
    assert r.status == "ok" and r.schedule_threads == 3 and seen == ["3"]
    for bad in ("4,x", "0"):
        with pytest.raises(SystemExit):
            B.main(["--models", "resnet50", "--schedule-threads", bad])
    monkeypatch.setenv("TEFUSE_SCHEDULE_JOBS", "none")
    with pytest.raises(SystemExit):
        B.main(["--models", "resnet50"])
