"""Command failures are one line, never a traceback or a silent success: exit 1 for a tefuse
error (a file that is not a model, no GPU), 2 for a usage error (a bad --input or --shape value)."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tefuse.cli import main
from tefuse.errors import ModelImportError
from tefuse.frontend.onnx import import_onnx


def _model(path, shape=(1, 3, 4, 4)):
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "r",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape))])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), str(path))
    return path


def _one_line_error(capsys, argv, expect, rc=1):
    assert main(argv) == rc
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert expect in err, err


def test_truncated_model(tmp_path, capsys):
    good = _model(tmp_path / "m.onnx").read_bytes()
    bad = tmp_path / "t.onnx"
    bad.write_bytes(good[: len(good) // 2])
    _one_line_error(capsys, ["run", str(bad)], f"{bad}: not")


def test_text_model(tmp_path, capsys):
    bad = tmp_path / "t.onnx"
    bad.write_text("this is not a model\n" * 5)
    _one_line_error(capsys, ["run", str(bad)], f"{bad}: not")


def test_empty_model_is_not_called_opset_1(tmp_path, capsys):
    bad = tmp_path / "e.onnx"
    bad.write_bytes(b"")
    _one_line_error(capsys, ["run", str(bad)], f"{bad}: empty file, not an ONNX model")
    with pytest.raises(ModelImportError, match="no graph or no opset"):
        import_onnx(onnx.ModelProto())


def test_missing_model(tmp_path, capsys):
    _one_line_error(capsys, ["run", str(tmp_path / "nope.onnx")], "no such ONNX file")
    _one_line_error(capsys, ["run", str(tmp_path / "nope.tefuse")], "no such model or artefact file")


def test_missing_input_file(tmp_path, capsys):
    m = _model(tmp_path / "m.onnx")
    _one_line_error(capsys, ["run", str(m), "--input", f"x={tmp_path}/nope.npy"],
                    f"--input x: no such file '{tmp_path}/nope.npy'", rc=2)


def test_input_that_is_not_npy(tmp_path, capsys):
    m = _model(tmp_path / "m.onnx")
    _one_line_error(capsys, ["run", str(m), "--input", f"x={m}"], f"--input x: cannot read '{m}': not a .npy", rc=2)
    np.save(tmp_path / "x.npy", np.ones((1, 3, 4, 4), "float32"))
    assert main(["run", str(m), "--input", f"x={tmp_path}/x.npy", "--repeat", "0"]) == 0


@pytest.mark.parametrize("shape", ["2xAx8", "2x0x8", "", "2x-1"])
def test_bad_shape(tmp_path, capsys, shape):
    m = _model(tmp_path / "m.onnx")
    _one_line_error(capsys, ["run", str(m), "--shape", f"x={shape}"],
                    f"--shape 'x={shape}': expected positive dims such as 1x3x224x224", rc=2)


def test_cuda_without_gpu(tmp_path, capsys):
    from tefuse.target import has_gpu

    if has_gpu("cuda"):
        pytest.skip("a GPU is present")
    m = _model(tmp_path / "m.onnx")
    _one_line_error(capsys, ["run", str(m), "-t", "cuda"], "no CUDA GPU on this machine, so `tefuse run -t cuda` "
                    "cannot run; run on the CPU (-t llvm)")


def test_zero_length_dimension_is_not_called_unknown(tmp_path):
    m = _model(tmp_path / "z.onnx", shape=(1, 0, 4))
    with pytest.raises(ModelImportError) as e:
        import_onnx(str(m))
    assert "dim 1 is 0 (zero-length tensors are not supported)" in str(e.value)
    assert "unknown" not in str(e.value)
