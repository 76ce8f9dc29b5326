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
    # (a chain's tensors take the precision's type, as `tefuse build` makes it)
    built = prepare_graph(parse_chain(spec, (1, 16, 8, 8), "float16", "NCHW"), target, precision="fp16")
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


_SPEC = ["conv2d(k=8,r=3,pad=1)+bias+relu", "--input", "1x8x10x10", "--target", "llvm", "--tuner", "random",
         "-j", "2", "--no-progress"]


def _error_line(capsys) -> tuple[str, str]:
    cap = capsys.readouterr()
    lines = [ln for ln in cap.err.splitlines() if "error" in ln]
    assert len(lines) == 1 and "Traceback" not in cap.err, cap.err
    return lines[0], cap.out


@pytest.mark.parametrize("where", ["/proc/tune.jsonl", "/proc/no_dir/tune.jsonl", "DIR"])
def test_cli_refuses_a_log_it_cannot_write_before_measuring(tmp_path, tefuse_dirs, capsys, monkeypatch, where):
    from tefuse.tune import loop

    def no_tuning(*args, **kwargs):
        raise AssertionError("tuned although the log cannot be written")

    monkeypatch.setattr(loop, "tune", no_tuning)
    log = str(tmp_path) if where == "DIR" else where
    assert main(["tune", *_SPEC, "--trials", "2", "--log", log]) == 1
    line, out = _error_line(capsys)
    assert line.startswith(f"tefuse tune: error: tuning log {log}: cannot write ("), line
    assert out == ""


def test_tune_refuses_an_unwritable_log_before_measuring(tmp_path):
    from tefuse.errors import TefuseError
    from tefuse.graph import GraphBuilder
    from tefuse.tune.loop import tune

    class NoBuilds:
        n_parallel = 1

        def build(self, *args, **kwargs):
            raise AssertionError("built a candidate although the log cannot be written")

        def close(self):
            pass

    g = GraphBuilder()
    graph = g.build(g.relu(g.input("x", (4, 8))))
    with pytest.raises(TefuseError, match=r"^tuning log /proc/t\.jsonl: cannot write \("):
        tune(graph, "llvm", trials=2, log="/proc/t.jsonl", builder=NoBuilds())


def test_a_log_write_that_fails_after_measuring_keeps_the_batch(tmp_path, tefuse_dirs, capsys, monkeypatch):
    import errno
    import tempfile

    from tefuse.tune.database import Database as DB

    def full_disk(self, records):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(DB, "append_many", full_disk)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    log = tmp_path / "t.jsonl"
    assert main(["tune", *_SPEC, "--trials", "2", "--log", str(log)]) == 1
    line, _ = _error_line(capsys)
    assert f"tuning log {log}: cannot write (No space left on device)" in line
    kept = list((tmp_path / "tmp").glob("tefuse-unsaved-*.jsonl"))
    assert len(kept) == 1 and f"the 2 record(s) just measured are in {kept[0]}" in line
    assert len(Database(kept[0]).records()) == 2


def _convs_model(path, second: bool):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype("float32"), "w1")]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c1"], ["r1"])]
    out, shape = "r1", [1, 4, 8, 8]
    if second:
        inits.append(numpy_helper.from_array(rng.standard_normal((8, 4, 1, 1)).astype("float32"), "w2"))
        nodes += [helper.make_node("Conv", ["r1", "w2"], ["c2"]), helper.make_node("Relu", ["c2"], ["y"])]
        out, shape = "y", [1, 8, 8, 8]
    graph = helper.make_graph(nodes, "convs", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info(out, TensorProto.FLOAT, shape)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


# a minute: tunes a model twice
@pytest.mark.slow
def test_untuned_only_tunes_the_kernels_without_records(tmp_path, tefuse_dirs, capsys, caplog):
    """A model whose first conv was tuned with another model (into the user database): tuned into
    another log with --untuned-only, only its second kernel is tuned; run again with more trials,
    that log's own kernel resumes and the first stays out. With --minutes it is refused."""
    pytest.importorskip("onnx")
    user, log = tmp_path / "user.jsonl", tmp_path / "t.jsonl"
    common = ["--target", "llvm", "--tuner", "random", "-j", "2", "--no-progress"]
    assert main(["tune", str(_convs_model(tmp_path / "one.onnx", False)), "--trials", "2", *common]) == 0
    first = {r.workload for r in Database(user).records()}
    assert len(first) == 1 and len(Database(user).records()) == 2
    two = str(_convs_model(tmp_path / "two.onnx", True))
    capsys.readouterr()
    with caplog.at_level("INFO", logger="tefuse.tune.loop"):
        assert main(["tune", two, "--trials", "2", "--log", str(log), *common, "--untuned-only"]) == 0
    assert "1 of 2 kernels have tuning records already" in caplog.text
    assert capsys.readouterr().out.count("best") == 1
    recs = Database(log).records()
    assert len(recs) == 2 and not {r.workload for r in recs} & first
    assert main(["tune", two, "--trials", "3", "--log", str(log), *common, "--untuned-only"]) == 0
    assert "1 measured, 2 from the log" in capsys.readouterr().out
    assert len(Database(log).records()) == 3 and len(Database(user).records()) == 2
    assert main(["tune", two, "--target", "llvm", "--minutes", "1", "--untuned-only", "--log", str(log)]) == 2
    assert "--untuned-only goes with --trials" in capsys.readouterr().err
