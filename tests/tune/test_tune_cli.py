"""`tefuse tune` end to end on the CPU target: a chain spec and a small ONNX model."""
from __future__ import annotations

import numpy as np
import pytest

from tefuse.cli import main
from tefuse.tune.database import Database


def test_cli_tunes_a_chain_and_resumes(tmp_path, capsys):
    log = tmp_path / "cli.jsonl"
    argv = ["tune", "conv2d(k=8,r=3,pad=1)+bias+relu", "--input", "1x8x10x10", "--target", "llvm",
            "--trials", "4", "--tuner", "random", "--log", str(log), "-j", "2", "--no-progress"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "best" in out and "4 measured" in out
    recs = Database(log).records()
    assert len(recs) == 4 and all(r.ok for r in recs)
    assert main(argv) == 0  # resume: nothing new
    assert "0 measured, 4 from the log" in capsys.readouterr().out
    assert len(Database(log).records()) == 4


def test_cli_rejects_a_bad_budget(tmp_path):
    assert main(["tune", "conv2d(k=8)+relu", "--input", "1x8x8x8", "--trials", "0",
                 "--log", str(tmp_path / "x.jsonl")]) == 2


def test_cli_tunes_an_onnx_model_and_run_applies_the_log(tmp_path, capsys, monkeypatch):
    onnx = pytest.importorskip("onnx")
    try:
        from tefuse.frontend.onnx import import_onnx  # noqa: F401
    except ImportError:
        pytest.skip("tefuse.frontend.onnx not available")
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype("float32"), "w")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["y"])], "conv_relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path = tmp_path / "conv_relu.onnx"
    onnx.save(model, str(path))
    log = tmp_path / "onnx.jsonl"
    assert main(["tune", str(path), "--target", "llvm", "--trials", "3", "--tuner", "grid",
                 "--log", str(log), "-j", "2", "--no-progress"]) == 0
    recs = Database(log).records()
    assert len(recs) == 3 and {r.config_index for r in recs} == {0, 1, 2}

    # `tefuse run` builds with the performance database: the best record is applied
    best = Database(log).best(recs[0].workload, "llvm")
    monkeypatch.setenv("TEFUSE_USER_DB", str(log))
    monkeypatch.setenv("TEFUSE_SYSTEM_DB", "")
    monkeypatch.setenv("TEFUSE_CACHE_DIR", str(tmp_path / "kernels"))
    capsys.readouterr()
    assert main(["run", str(path), "--verbose-groups"]) == 0
    assert f"[{best.template} #{best.config_index}, tuned]" in capsys.readouterr().out
    assert main(["run", str(path), "--verbose-groups", "--no-db"]) == 0
    assert ", fallback]" in capsys.readouterr().out


def test_cli_tunes_the_kernels_a_low_precision_build_makes(tmp_path, monkeypatch):
    """fp16 on CUDA builds NHWC kernels: `tune --precision fp16` must tune those, or a build
    never finds its records."""
    import tefuse.tune.loop as loop
    from tefuse.driver import prepare_graph
    from tefuse.plan.spec import parse_chain
    from tefuse.target import make_target
    from tefuse.tune.task import as_tasks

    seen = {}

    def fake_tune(graph, target, **kw):
        seen["keys"] = {t.workload for t in as_tasks(graph, target)}
        return []

    monkeypatch.setattr(loop, "tune", fake_tune)
    spec = "conv2d(k=16,r=3,pad=1)+bias+relu"
    assert main(["tune", spec, "--input", "1x16x8x8", "-t", "cuda", "--precision", "fp16", "--trials", "2",
                 "--log", str(tmp_path / "t.jsonl"), "--no-progress"]) == 0
    target = make_target("cuda")
    built = prepare_graph(parse_chain(spec, (1, 16, 8, 8), "float32", "NCHW"), target, precision="fp16")
    assert [n.attrs["layout"] for n in built.nodes if n.op == "conv2d"] == ["NHWC"]
    assert seen["keys"] == {t.workload for t in as_tasks(built, target)}


def test_cli_only_narrows_the_search_and_names_a_value_no_template_has(tmp_path, capsys):
    log = tmp_path / "only.jsonl"
    argv = ["tune", "conv2d(k=8,r=3,pad=1)+bias+relu", "--input", "1x8x10x10", "--target", "llvm",
            "--trials", "3", "--tuner", "grid", "--log", str(log), "-j", "2", "--no-progress"]
    assert main(argv + ["--only", "unroll=16"]) == 0
    recs = Database(log).records()
    assert recs and all(r.config["unroll"] == 16 for r in recs[1:])  # the first: the untuned config
    capsys.readouterr()
    assert main(argv + ["--only", "unroll=17"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    (line,) = [ln for ln in err.splitlines() if "error" in ln]
    assert "--only" in line and "unroll=17" in line and "g0_conv2d_bias_add_relu" in line
    assert main(argv + ["--only", "unroll"]) == 2  # argparse: expected KNOB=VALUE
