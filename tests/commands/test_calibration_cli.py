"""`--precision int8` and `fp8` through the CLI: calibrated on samples, saved, reused; bad input one line."""
import json

import numpy as np
import pytest

from tefuse.cli import main
from tests.commands.models import small_cnn

pytest.importorskip("onnxruntime")


def _samples(path, n=4):
    rng = np.random.default_rng(0)
    np.savez(path, x=rng.standard_normal((n, 1, 3, 8, 8)).astype(np.float32))
    return path


@pytest.mark.parametrize("precision", ["int8", "fp8"])
def test_quantized_build_calibrates_saves_and_runs_within_tolerance(precision, tmp_path, capsys):
    model = small_cnn(tmp_path / "cnn.onnx", widths=(16, 16))
    samples = _samples(tmp_path / "samples.npz")
    saved = tmp_path / "cal.json"
    assert main(["build", str(model), "--precision", precision, "--calibration", str(samples), "--calibrator", "max",
                 "--save-calibration", str(saved), "-e", "summary"]) == 0
    cal = json.loads(saved.read_text())
    assert cal["method"] == "max" and len(cal["thresholds"]) == 2  # the second conv and the Gemm: the first reads 3 channels, stays float
    assert cal["residuals"] is True
    float_res = tmp_path / "float_res.json"
    assert main(["build", str(model), "--precision", precision, "--calibration", str(saved), "--float-residuals",
                 "--save-calibration", str(float_res), "-e", "summary"]) == 0
    assert json.loads(float_res.read_text())["residuals"] is False
    capsys.readouterr()
    # the saved calibration serves a run; the softmax outputs stay within the format's error of onnxruntime
    assert main(["run", str(model), "--precision", precision, "--calibration", str(saved), "--check", "--repeat",
                 "0", "--rtol", "0.05", "--atol", "0.02"]) == 0
    assert "-> OK" in capsys.readouterr().out


def test_int8_without_samples_or_with_wrong_samples_is_one_line(tmp_path, capsys):
    model = small_cnn(tmp_path / "cnn.onnx")
    assert main(["build", str(model), "--precision", "int8", "-e", "summary"]) != 0
    assert "--precision int8 needs --calibration" in capsys.readouterr().err
    np.savez(tmp_path / "bad.npz", x=np.zeros((2, 1, 3, 4, 4), np.float32))
    assert main(["build", str(model), "--precision", "int8", "--calibration", str(tmp_path / "bad.npz"),
                 "-e", "summary"]) != 0
    errors = [ln for ln in capsys.readouterr().err.splitlines() if "error" in ln]
    assert len(errors) == 1 and "input 'x' samples are (1, 3, 4, 4), the model takes (1, 3, 8, 8)" in errors[0]


def test_the_cli_spells_the_precisions_and_calibrators_the_library_has():
    from tefuse.commands.build import CHAIN_DTYPES, PRECISION_CHOICES
    from tefuse.commands.calibration import CALIBRATORS
    from tefuse.graph.calibration import METHODS
    from tefuse.graph.precision import LOW, PRECISIONS

    assert set(PRECISION_CHOICES) == set(PRECISIONS) and set(CALIBRATORS) == set(METHODS)
    assert CHAIN_DTYPES == LOW  # a chain's tensors under --precision: the types the precision computes in
