"""`tefuse tune --minutes`: a small model tuned for real on the CPU within a budget, then resumed
from its log."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from tefuse.cli import main
from tefuse.tune.database import Database


def _two_kernel_model(path) -> None:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((8, 4, 3, 3)).astype("float32"), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((8, 8, 1, 1)).astype("float32"), "w2")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c1"], ["r1"]),
         helper.make_node("Conv", ["r1", "w2"], ["c2"]), helper.make_node("Sigmoid", ["c2"], ["y"])], "two",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 8])], [w1, w2])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


def _keys(recs) -> list:
    return [(r.workload, r.template, json.dumps(r.config, sort_keys=True)) for r in recs]


def test_a_budget_tunes_every_kernel_keeps_the_time_and_a_rerun_resumes(tmp_path, tefuse_dirs, capsys):
    model, log, report = tmp_path / "two.onnx", tmp_path / "t.jsonl", tmp_path / "t.json"
    _two_kernel_model(model)
    minutes = 0.1

    def argv(minutes: float) -> list[str]:
        return ["tune", str(model), "-t", "llvm", "--minutes", str(minutes), "--round-trials", "2",
                "--tuner", "random", "-j", "1", "--log", str(log), "--no-progress"]

    assert main(argv(minutes) + ["--json", str(report)]) == 0
    out = capsys.readouterr().out
    recs = Database(log).records()
    doc = json.loads(report.read_text())
    assert len({r.workload for r in recs}) == 2 == len(doc["kernels"])  # every kernel has records
    # the budget is kept but for the batch in flight at the deadline (a few seconds here)
    assert doc["budget"]["elapsed_s"] <= minutes * 60 + 10
    assert doc["compile_error_rate"] == 0 and re.search(r"compile errors: 0 of \d+ trials \(0\.0%\)", out)
    (line,) = [ln for ln in out.splitlines() if ln.startswith("model time:")]
    assert re.match(r"model time: untuned [\d.]+ ms, tuned [\d.]+ ms \([\d.]+x; \d of 2 kernels tuned\)", line)
    (times,) = doc["model"]
    assert times["untuned_ms"] > 0 and times["tuned_ms"] > 0 and times["kernels"] == 2

    # resumed: more records, none of a config measured before
    assert main(argv(minutes / 2) + ["--no-compare"]) == 0
    again = Database(log).records()
    assert len(again) > len(recs)
    assert len(set(_keys(again))) == len(again)
    assert "from the log" in capsys.readouterr().out


def test_trials_and_minutes_exclude_each_other(tmp_path, capsys):
    base = ["tune", "conv2d(k=8)+relu", "--input", "1x8x8x8", "--log", str(tmp_path / "x.jsonl"), "--no-progress"]
    assert main(base + ["--minutes", "1", "--trials", "4"]) == 2
    assert "--trials and --minutes exclude each other" in capsys.readouterr().err
    assert main(base + ["--minutes", "0"]) == 2
    assert main(base + ["--round-trials", "4", "--trials", "4"]) == 2


def test_kernels_alike_but_for_a_scale_are_one_budgeted_kernel(tmp_path, tefuse_dirs, capsys):
    """Two convs differing only in the scalar they multiply by (a quantized model's layers): one
    kernel in the budget, weighted twice, and both take its records."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 8, 3, 3)).astype("float32"), f"w{k}") for k in (1, 2)]
    inits += [numpy_helper.from_array(np.array(s, np.float32), f"s{k}") for k, s in ((1, 0.5), (2, 0.25))]
    nodes = []
    for k, x in ((1, "x"), (2, "r1")):
        nodes += [helper.make_node("Conv", [x, f"w{k}"], [f"c{k}"], pads=[1, 1, 1, 1]),
                  helper.make_node("Mul", [f"c{k}", f"s{k}"], [f"m{k}"]), helper.make_node("Relu", [f"m{k}"], [f"r{k}"])]
    graph = helper.make_graph(nodes, "alike", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 8, 8])],
                              [helper.make_tensor_value_info("r2", TensorProto.FLOAT, [1, 8, 8, 8])], inits)
    model, log, report = tmp_path / "alike.onnx", tmp_path / "a.jsonl", tmp_path / "a.json"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(model))
    assert main(["tune", str(model), "-t", "llvm", "--minutes", "0.05", "--round-trials", "2", "--tuner", "random",
                 "-j", "1", "--log", str(log), "--no-progress", "--json", str(report)]) == 0
    doc = json.loads(report.read_text())
    assert len(doc["kernels"]) == 1 and len({r.workload for r in Database(log).records()}) == 1
    (times,) = doc["model"]
    assert times["kernels"] == 2 and re.search(r"2 of 2 kernels tuned", capsys.readouterr().out)
