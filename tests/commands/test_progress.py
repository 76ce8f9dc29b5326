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
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("TEFUSE_CACHE_DIR", str(tmp_path / "kernels"))
    monkeypatch.setenv("TEFUSE_SYSTEM_DB", "")
    monkeypatch.setenv("TEFUSE_USER_DB", str(tmp_path / "user.jsonl"))
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


def test_tuning_shows_a_bar_per_kernel(env, monkeypatch, capsys):
    err = _run(monkeypatch, ["tune", "conv2d(k=8,r=3,pad=1)+relu", "-i", "1x8x8x8", "--trials", "2",
                             "--tuner", "random", "--log", str(env / "t.jsonl"), "-j", "1"])
    assert "tuning " in err and "2/2" in err and "best " in err
    assert "[cpu_generic]: best" in capsys.readouterr().out
