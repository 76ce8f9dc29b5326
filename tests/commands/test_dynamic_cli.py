"""`tefuse build/run --dynamic`: one build over dim ranges, saved and run at several sizes, each
checked against onnxruntime; sizes out of range and misused options are one line."""
from __future__ import annotations

import json

import numpy as np
import onnx
import pytest

from tefuse.cli import main
from tests.frontend.dynamic_models import cnn, encoder

pytest.importorskip("onnxruntime")


@pytest.fixture
def models(tmp_path, tefuse_dirs):
    onnx.save(cnn("N"), str(tmp_path / "cnn.onnx"))
    onnx.save(encoder("B", "S"), str(tmp_path / "encoder.onnx"))
    return tmp_path


def test_run_dynamic_model_at_several_sizes_reports_them(models, capsys):
    report = models / "r.json"
    rc = main(["run", str(models / "encoder.onnx"), "--dynamic", "B=1:2:4", "--dynamic", "S=1:8:16",
               "--sizes", "B=1,S=3", "--sizes", "B=4,S=16", "--check", "--iterations", "1", "--json", str(report)])
    out = capsys.readouterr().out
    assert rc == 0
    assert "sizes B=1,S=3 (ranges B=1:2:4, S=1:8:16)" in out and "sizes B=4,S=16" in out
    assert out.count("-> OK") == 2
    runs = json.loads(report.read_text())["runs"]
    assert [r["sizes"] for r in runs] == [{"B": 1, "S": 3}, {"B": 4, "S": 16}]
    assert [r["outputs"][0]["shape"] for r in runs] == [[1, 3, 32], [4, 16, 32]]


def test_built_artefact_keeps_ranges_and_refuses_a_size_outside_in_one_line(models, capsys):
    art = models / "cnn.tefuse"
    assert main(["build", str(models / "cnn.onnx"), "--dynamic", "N=1:4:8", "-o", str(art)]) == 0
    capsys.readouterr()
    assert main(["run", str(art), "--sizes", "N=3", "--iterations", "0", "-o", str(models / "o.npz")]) == 0
    assert "sizes N=3 (ranges N=1:4:8)" in capsys.readouterr().out
    assert np.load(models / "o.npz")["logits"].shape == (3, 10)
    assert main(["run", str(art), "--sizes", "N=9", "--iterations", "0"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "tefuse run: error: dim 'N': input 'x' axis 0 is 9, outside its range 1:4:8"


def test_build_without_a_range_for_a_named_dim_is_one_line(models, capsys):
    assert main(["build", str(models / "encoder.onnx"), "--dynamic", "B=1:2:4"]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("tefuse build: error: input 'x' (float32[B,S,32]): dim 'S' has no range")
    assert "--dynamic S=min:opt:max" in err


@pytest.mark.parametrize("argv, says", [
    (["--dynamic", "N=1:4:8", "--batch", "1,2"], "--dynamic and --batch"),
    (["--dynamic", "N=8:4:1"], "min <= opt <= max"),
    (["--buckets", "N=2,8"], "--buckets cuts the ranges of --dynamic dims"),
    (["--dynamic", "N=1:4:8", "--buckets", "N=2,x"], "not a list of sizes"),
])
def test_misused_dynamic_option_is_a_usage_error(models, capsys, argv, says):
    assert main(["build", str(models / "cnn.onnx"), *argv]) == 2
    assert says in capsys.readouterr().err


def test_build_with_buckets_saves_them(models, capsys):
    from tefuse.runtime.artifact import load

    art = models / "cnn.tefuse"
    assert main(["build", str(models / "cnn.onnx"), "--dynamic", "N=1:4:8", "--buckets", "N=2,8", "-o", str(art)]) == 0
    assert load(art).buckets.to_json() == {"N": [2, 8]}
    assert main(["run", str(art), "--sizes", "N=7", "--iterations", "0"]) == 0
    assert main(["build", str(models / "cnn.onnx"), "--dynamic", "N=1:4:8", "--buckets", "N=16"]) == 1
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "tefuse build: error: buckets of dim 'N': end 16 lies outside its range 1:4:8")
