"""Bad input to the commands: one line naming the what and where, the right exit code, and
an output path that cannot be written refused before the work."""
from __future__ import annotations

import os

import numpy as np
import pytest

from tefuse.cli import main

from .models import small_cnn, two_inputs


@pytest.fixture
def model(tmp_path, tefuse_dirs):
    return str(two_inputs(tmp_path / "two.onnx"))


def _one_error_line(capsys, *words) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if "error" in ln]
    assert len(lines) == 1 and "Traceback" not in err, err
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def test_an_npz_that_lacks_inputs_is_an_error_naming_them(model, tmp_path, capsys):
    np.savez(tmp_path / "empty.npz")
    assert main(["run", model, "--input", str(tmp_path / "empty.npz"), "--iterations", "0"]) == 1
    _one_error_line(capsys, "empty.npz", "'x'", "'y'")
    np.savez(tmp_path / "half.npz", x=np.ones((2, 3), np.float32))
    assert main(["run", model, "--input", str(tmp_path / "half.npz"), "--iterations", "0"]) == 1
    line = _one_error_line(capsys, "half.npz", "'y'")
    assert "'x'" not in line


def test_an_npz_with_every_input_runs(model, tmp_path, capsys):
    x, y = np.full((2, 3), 2, np.float32), np.full((2, 3), -3, np.float32)
    np.savez(tmp_path / "all.npz", x=x, y=y)
    out = tmp_path / "o.npz"
    assert main(["run", model, "--input", str(tmp_path / "all.npz"), "--iterations", "0", "-o", str(out)]) == 0
    with np.load(out) as saved:
        np.testing.assert_array_equal(saved["prod"], x * y)
        np.testing.assert_array_equal(saved["sum/relu"], np.maximum(x + y, 0))


@pytest.mark.parametrize("option", ["-o", "--json"])
@pytest.mark.parametrize("where", ["/proc/o.out", "missing_dir/o.out", "DIR"])
def test_run_refuses_an_output_path_it_cannot_write_before_running(model, tmp_path, capsys, option, where):
    path = str(tmp_path) if where == "DIR" else where if where.startswith("/") else str(tmp_path / where)
    assert main(["run", model, "--iterations", "0", option, path]) == 1
    _one_error_line(capsys, option, path)
    assert "kernels" not in capsys.readouterr().out  # nothing was built or run


def test_build_refuses_an_output_path_it_cannot_write_before_building(tmp_path, tefuse_dirs, capsys):
    cnn = str(small_cnn(tmp_path / "cnn.onnx"))
    assert main(["build", cnn, "-o", "/proc/x.tefuse"]) == 1
    err = capsys.readouterr().err
    assert "built" not in err
    assert err.strip().splitlines()[-1].startswith("tefuse build: error: -o /proc/x.tefuse: cannot write")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes read-only files")
def test_build_refuses_a_read_only_output_file(tmp_path, tefuse_dirs, capsys):
    cnn = str(small_cnn(tmp_path / "cnn.onnx"))
    out = tmp_path / "ro.tefuse"
    out.write_bytes(b"")
    out.chmod(0o444)
    assert main(["build", cnn, "-o", str(out)]) == 1
    _one_error_line(capsys, "read-only")


def test_negative_iterations_are_a_usage_error(model, capsys):
    assert main(["run", model, "--iterations", "-1"]) == 2
    _one_error_line(capsys, "--iterations", "-1")


def test_negative_build_jobs_are_refused(tmp_path, tefuse_dirs, monkeypatch, capsys):
    monkeypatch.setenv("TEFUSE_BUILD_JOBS", "-3")
    cnn = str(small_cnn(tmp_path / "cnn.onnx"))
    assert main(["build", cnn]) == 1
    _one_error_line(capsys, "TEFUSE_BUILD_JOBS='-3'")


@pytest.mark.parametrize("command", [["build", "conv2d(k=8,r=1)+relu", "-i", "1x4x8x8"], ["cache", "info"],
                                     ["db", "list"]])
def test_a_user_db_that_is_a_directory_is_one_line_naming_the_variable(tmp_path, tefuse_dirs, monkeypatch,
                                                                       capsys, command):
    monkeypatch.setenv("TEFUSE_USER_DB", str(tmp_path))
    assert main(command) == 1
    line = _one_error_line(capsys, f"TEFUSE_USER_DB={tmp_path}", "is a directory")
    assert line.startswith(f"tefuse {command[0]}")


@pytest.mark.parametrize("shape, why", [((1, 3, 2, 2), "(dim 2 is fixed at 8, dim 3 is fixed at 8)"),
                                        ((3, 8, 8), "(4 dims, not 3)"), ((2, 3, 8, 8), "(dim 0 is fixed at 1)")])
def test_an_input_file_that_does_not_fit_a_fixed_model_input_is_one_line(tmp_path, tefuse_dirs, capsys, shape, why):
    cnn = str(small_cnn(tmp_path / "cnn.onnx"))
    np.save(tmp_path / "wrong.npy", np.ones(shape, np.float32))
    assert main(["run", cnn, "--input", f"x={tmp_path / 'wrong.npy'}", "--iterations", "0"]) == 1
    have = "x".join(map(str, shape))
    line = _one_error_line(capsys, f"--input x ({tmp_path / 'wrong.npy'})", f"the array's shape is {have}",
                           "input 'x' is 1x3x8x8 in the model", why)
    assert "MaxPool" not in line and "window" not in line


def test_an_input_file_sizes_a_symbolic_dim_but_must_fit_the_fixed_ones(tmp_path, tefuse_dirs, capsys):
    cnn = str(small_cnn(tmp_path / "cnn.onnx", batch="N"))
    np.save(tmp_path / "b4.npy", np.ones((4, 3, 8, 8), np.float32))
    out = tmp_path / "o.npz"
    assert main(["run", cnn, "--input", f"x={tmp_path / 'b4.npy'}", "--iterations", "0", "-o", str(out)]) == 0
    with np.load(out) as saved:
        assert saved["prob"].shape == (4, 5)
    capsys.readouterr()
    np.save(tmp_path / "small.npy", np.ones((4, 3, 2, 2), np.float32))
    assert main(["run", cnn, "--input", f"x={tmp_path / 'small.npy'}", "--iterations", "0"]) == 1
    _one_error_line(capsys, "the array's shape is 4x3x2x2", "input 'x' is Nx3x8x8 in the model",
                    "dim 2 is fixed at 8, dim 3 is fixed at 8")
    assert main(["run", cnn, "--input", f"x={tmp_path / 'b4.npy'}", "--shape", "x=2x3x8x8",
                 "--iterations", "0"]) == 1
    _one_error_line(capsys, "the array's shape is 4x3x8x8, but --shape gives 2x3x8x8")


def test_shape_cannot_change_a_dim_the_model_fixes(tmp_path, tefuse_dirs, capsys):
    cnn = str(small_cnn(tmp_path / "cnn.onnx"))
    assert main(["build", cnn, "--shape", "x=8x3x8x8", "-o", str(tmp_path / "out.tefuse")]) == 2
    _one_error_line(capsys, "--shape x=8x3x8x8: input 'x' is 1x3x8x8 in the model (dim 0 is fixed at 1)",
                    "only the dims the model leaves symbolic")
    assert not (tmp_path / "out.tefuse").exists()
    assert main(["build", cnn, "--shape", "x=1x3x8x8", "-e", "graph"]) == 0  # the model's own shape
    cnn_n = str(small_cnn(tmp_path / "cnn_n.onnx", batch="N"))
    capsys.readouterr()
    assert main(["build", cnn_n, "--shape", "x=8x3x8x8", "-e", "graph"]) == 0
    assert main(["build", cnn_n, "--shape", "x=8x3x9x9", "-e", "graph"]) == 2
    _one_error_line(capsys, "input 'x' is Nx3x8x8 in the model (dim 2 is fixed at 8, dim 3 is fixed at 8)")


def test_the_help_says_what_shape_can_change(capsys):
    assert main(["build", "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "the dims the model fixes must be given as they are" in help_text


def test_a_missing_initializer_names_the_file_node_and_input(tmp_path, tefuse_dirs, capsys):
    import onnx
    from onnx import TensorProto, helper

    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["c"], name="conv1"),
                           helper.make_node("Relu", ["c"], ["y"], name="relu1")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 4, 4])])
    path = tmp_path / "no_init.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    assert main(["build", str(path)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "topologically" not in err, err
    assert f"tefuse build: error: {str(path)!r}: 1 node(s) read undefined tensors:" in err
    assert "node 'conv1' (Conv, opset 13): input 'w' is not defined" in err
