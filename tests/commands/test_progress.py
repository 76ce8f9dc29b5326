"""Progress bars: on a terminal only, off with --no-progress, log lines printed above them."""
from __future__ import annotations

import io
import sys

import pytest

from tefuse.cli import main
from tefuse.commands import progress

from .models import small_cnn

pytest.importorskip("tqdm")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def env(tmp_path, tefuse_dirs):
    yield tmp_path
    progress.configure(True)


def _run(monkeypatch, argv) -> str:
    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    assert main(argv) == 0
    monkeypatch.setattr(sys, "stderr", sys.__stderr__)
    return term.getvalue()


def test_a_model_build_shows_a_bar_on_a_terminal_with_log_lines_intact(env, monkeypatch, capsys):
    model = str(small_cnn(env / "cnn.onnx"))
    err = _run(monkeypatch, ["build", model, "-j", "1"])
    assert "compiling kernels" in err and "6/6" in err and "kernel/s" in err
    lines = [ln.split("\r")[-1] for ln in err.splitlines()]
    assert any(ln.startswith("built 6 kernels for 10 ops") for ln in lines)
    assert any(ln.startswith("imported 9 ONNX nodes") for ln in lines)


def test_no_progress_and_a_pipe_show_no_bar(env, monkeypatch, capsys):
    model = str(small_cnn(env / "cnn.onnx"))
    err = _run(monkeypatch, ["build", model, "--no-progress"])
    assert "compiling kernels" not in err and "\r" not in err
    assert err.count("\n") == 2
    assert main(["build", model]) == 0  # capsys: not a terminal
    err = capsys.readouterr().err
    assert "compiling kernels" not in err and "\r" not in err


def test_tuning_shows_a_bar(env, monkeypatch, capsys):
    err = _run(monkeypatch, ["tune", "conv2d(k=8,r=3,pad=1)+relu", "-i", "1x8x8x8", "--trials", "2",
                             "--tuner", "random", "--log", str(env / "t.jsonl"), "-j", "1"])
    assert "tuning " in err and "2/2" in err and "best " in err
    assert "[cpu_generic]: best" in capsys.readouterr().out


def test_tuning_batch_sizes_get_a_bar_each_left_on_screen(env, monkeypatch, capsys):
    err = _run(monkeypatch, ["tune", "conv2d(k=4,r=3,pad=1)+relu", "-i", "1x4x6x6", "--batch", "1,2", "--trials", "2",
                             "--tuner", "random", "--log", str(env / "t.jsonl"), "-j", "1"])
    final = [ln.split("\r")[-1] for ln in err.split("\n")]  # what each screen line shows at the end
    done = [ln for ln in final if ln.startswith("tuning ") and "2/2" in ln]
    assert [ln.split(":")[0] for ln in done] == ["tuning 1 kernel (batch 1)", "tuning 1 kernel (batch 2)"]
    out = capsys.readouterr().out
    assert "tuning " not in out and "\r" not in out  # bars never on stdout


def test_tuning_with_no_progress_shows_no_bar_on_a_terminal(env, monkeypatch, capsys):
    err = _run(monkeypatch, ["--no-progress", "tune", "conv2d(k=4,r=3,pad=1)+relu", "-i", "1x4x6x6", "--trials", "2",
                             "--tuner", "random", "--log", str(env / "t.jsonl"), "-j", "1"])
    assert "\r" not in err and "trial/s" not in err
    assert "[cpu_generic]: best" in capsys.readouterr().out


def test_build_workers_stderr_comes_back_as_log_lines(caplog):
    """TVM's native warnings in a build worker: logged (above any bar), not written across it."""
    import logging
    import os
    import time

    from tefuse.tune import builder

    caplog.set_level(builder.WORKER_OUTPUT, logger="tefuse.tune.builder")
    w = builder._stderr_pipe()
    os.write(w, b"[08:11:05] codegen_llvm.cc:2151: Warning: Unroll hint ignored\n\n")
    os.close(w)
    deadline = time.monotonic() + 5
    while not caplog.records and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.INFO - 5, "build worker: [08:11:05] codegen_llvm.cc:2151: Warning: Unroll hint ignored")]
