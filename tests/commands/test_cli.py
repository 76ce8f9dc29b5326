"""The command line's surface: verbosity, start-up, --version, exit codes, broken pipes."""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tefuse.cli import VERBOSE, main

from .models import small_cnn

ROOT = Path(__file__).resolve().parents[2]
CHAIN = "conv2d(k=8,r=1)+relu"


def _python(code: str, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, **kw.pop("env", {})}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=120, **kw)


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"], ["build", "--help"], ["tune", "--help"],
                                  ["db", "list", "--help"], ["bench", "--help"]])
def test_help_loads_neither_tvm_nor_numpy(argv):
    code = ("import sys; from tefuse.cli import main; rc = main(%r); "
            "heavy = sorted(m for m in ('tvm', 'numpy', 'onnx', 'tefuse.ops', 'tefuse.driver') if m in sys.modules); "
            "print(rc, heavy, file=sys.stderr)" % argv)
    res = _python(code)
    assert res.stderr.strip().splitlines()[-1] == "0 []", res.stderr
    assert "usage: tefuse" in res.stdout


def test_version_names_tefuse_tvm_and_the_cuda_compiler(capsys):
    assert main(["--version"]) == 0
    lines = capsys.readouterr().out.splitlines()
    from tefuse import __version__
    assert lines[0] == f"tefuse {__version__}"
    assert lines[1].startswith("TVM 0.27")
    assert lines[2].startswith("CUDA compiler: ") and ("nvcc" in lines[2] or "NVRTC" in lines[2])


def test_version_reports_nvrtc_when_asked_for(monkeypatch, capsys):
    monkeypatch.setenv("TVM_CUDA_COMPILE_MODE", "nvrtc")
    assert main(["--version"]) == 0
    assert "CUDA compiler: NVRTC (TVM_CUDA_COMPILE_MODE=nvrtc)" in capsys.readouterr().out


@pytest.mark.parametrize("before,after,level", [
    ([], [], logging.INFO), (["-q"], [], logging.WARNING), ([], ["-q"], logging.WARNING),
    (["-v"], [], VERBOSE), ([], ["-v"], VERBOSE), ([], ["-vv"], logging.DEBUG),
    (["-v"], ["-v"], logging.DEBUG), (["db", "-v"], [], VERBOSE),
])
def test_verbosity_before_and_after_the_subcommand(tmp_path, capsys, monkeypatch, before, after, level):
    import tefuse.commands.db as db

    seen, real = [], db.run_list
    monkeypatch.setattr(db, "run_list", lambda args: seen.append(logging.getLogger("tefuse").level) or real(args))
    cmd = ["db", "list"] if before[:1] != ["db"] else ["list"]
    (tmp_path / "empty.jsonl").touch()  # an empty log (a missing one is an error)
    assert main([*before, *cmd, "--db", str(tmp_path / "empty.jsonl"), *after]) == 0
    assert seen == [level]
    assert capsys.readouterr().out == "no tuning records\n"


def test_main_called_from_python_leaves_logging_as_it_was(tmp_path):
    from tefuse.cli import CliHandler

    root = logging.getLogger()
    before = (root.level, logging.getLogger("tefuse").level, list(root.handlers))
    (tmp_path / "empty.jsonl").touch()
    assert main(["-vv", "db", "list", "--db", str(tmp_path / "empty.jsonl")]) == 0
    assert (root.level, logging.getLogger("tefuse").level, list(root.handlers)) == before
    assert not any(isinstance(h, CliHandler) for h in root.handlers)


@pytest.fixture
def kernel_cache(tefuse_dirs):
    return tefuse_dirs


def test_a_build_logs_one_line_per_stage_and_v_a_line_per_kernel(tmp_path, capsys, kernel_cache):
    """Default: `imported ...` and one `built ...` line, however many kernels; -v adds a line per
    kernel (built, no tuning record); -q: nothing on stderr."""
    model = str(small_cnn(tmp_path / "cnn.onnx"))
    argv = ["build", model, "-t", "cuda:sm_80", "-j", "2"]
    assert main(argv) == 0
    out = capsys.readouterr()
    err = out.err.splitlines()
    assert len(err) == 2, out.err
    assert err[0].startswith("imported 9 ONNX nodes") and err[1].startswith("built 6 kernels for 10 ops")
    assert err[1].endswith("0 tuned, 6 fallback configs")
    assert out.out.startswith("6 kernels for 10 ops on cuda")

    assert main([*argv, "-v"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert sum("] built g" in ln for ln in err) == 6
    assert sum(ln.startswith("no tuning record for ") for ln in err) == 6

    assert main(["-q", *argv]) == 0
    out = capsys.readouterr()
    assert out.err == "" and out.out.startswith("6 kernels")


def test_a_tefuse_error_is_one_line_and_exit_1_with_the_traceback_under_debug(capsys):
    assert main(["build", "conv2d(k=8,r=1)+frobnicate", "-i", "1x4x8x8", "--no-db"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("tefuse build: error: ") and "Traceback" not in err
    assert main(["build", "conv2d(k=8,r=1)+frobnicate", "-i", "1x4x8x8", "--no-db", "--debug"]) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and err.splitlines()[-1].startswith("tefuse build: error:")


@pytest.mark.parametrize("argv,message", [
    (["build", CHAIN, "--frobnicate"], "unrecognized arguments"),
    (["run", "m.onnx", "--iterations", "3", "--duration", "1"], "not allowed with argument"),
    (["build", CHAIN, "--shape", "1xax8"], "expected positive dims"),
    (["build", CHAIN, "-i", "1x4x8x8", "--shape", "1x4x8x8"], "give the chain's input shape once"),
    (["tune", CHAIN, "--trials", "0"], "--trials must be at least 1"),
    (["build", CHAIN, "-e", "ptx", "-t", "llvm"], "--emit ptx needs a cuda target"),
])
def test_usage_errors_exit_2(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def _big_log(path: Path, n: int) -> None:
    from tefuse.tune.database import Database
    from tefuse.tune.record import TuningRecord

    Database(path).append_many([TuningRecord(workload=f"conv2d|{i}x8x8x8|float32|{i:016x}", target="llvm",
                                             device="cpu", template="cpu_generic", config={}, config_index=0,
                                             costs=[1e-3]) for i in range(n)])


def test_a_closed_pipe_ends_quietly(tmp_path):
    log = tmp_path / "big.jsonl"
    _big_log(log, 3000)  # about 250 kB of rows: far more than a pipe holds
    code = ("import subprocess, sys\n"
            "p = subprocess.Popen([sys.executable, '-m', 'tefuse', 'db', 'list', '--db', %r],"
            " stdout=subprocess.PIPE, stderr=subprocess.PIPE)\n"
            "first = p.stdout.readline(); p.stdout.close(); err = p.stderr.read(); rc = p.wait()\n"
            "print(rc, first.decode().split()[0], repr(err.decode()))\n" % str(log))
    res = _python(code)
    assert res.stdout.split() == ["141", "workload", "''"], res.stdout + res.stderr


def test_db_best_prints_a_json_record(tmp_path, capsys):
    """`tefuse db best` prints one JSON record a line, parseable as it is piped."""
    log = tmp_path / "small.jsonl"
    _big_log(log, 2)
    assert main(["db", "best", "conv2d|1x8", "--db", str(log)]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["workload"].startswith("conv2d|1x8x8x8")


def test_onnxruntime_reference_does_not_warn_per_initializer(tmp_path, capfd):
    """The zoo's models list initializers as inputs; onnxruntime warns once per initializer
    (269 lines for ResNet-50) unless its log level is raised."""
    ort = pytest.importorskip("onnxruntime")
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    from tefuse.frontend.reference import onnxruntime_outputs

    w = numpy_helper.from_array(np.ones((2, 3), np.float32), "w")
    g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g",
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in ("x", "w")],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], [w])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    capfd.readouterr()
    ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert "appears in graph inputs" in capfd.readouterr().err  # what the option silences
    (y,) = onnxruntime_outputs(model, {"x": np.zeros((2, 3), np.float32)})
    assert (y == 1).all() and "appears in graph inputs" not in capfd.readouterr().err


def test_a_command_line_build_runs_without_loading_torch(tmp_path, torch_installed):
    """tvm_ffi would import torch (4-5 s) at TVM's import; a command other than bench keeps it out
    and still builds."""
    out = tmp_path / "relu.tar"
    code = ("import sys\n"
            f"sys.argv = ['tefuse', 'build', 'relu', '-i', '1x8x4x4', '-t', 'llvm', '-o', {str(out)!r}]\n"
            "from tefuse.cli import main\n"
            "rc = main()\n"
            "print(rc, 'tvm' in sys.modules, sys.modules.get('torch', 'never imported'))\n")
    p = _python(code)
    assert p.stdout.splitlines()[-1].split() == ["0", "True", "None"], p.stdout + p.stderr
    assert out.is_file()
