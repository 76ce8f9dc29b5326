"""Ctrl-C ends `tefuse build` and `tefuse tune` within seconds: exit code 130, one line, no
traceback, no worker left behind, the tuning log whole.

A terminal's Ctrl-C sends SIGINT to the whole foreground process group (workers included);
`kill -INT` to the main process alone is the other case. Three processes are interrupted per
test, at once, so that a hang in one run of three shows.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import psutil
import pytest

from tests.procs import alive

from .models import conv_stack

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux process semantics")

PROMPT_SECONDS = 8  # from SIGINT to exit, on a loaded 2-core machine
MODES = ("group", "group", "main")  # where the SIGINT goes, one per process


def _default_sigint() -> None:
    """SIGINT's default action in the child, as a terminal's foreground command has it: an
    ignored SIGINT is inherited across exec, and Python then installs no KeyboardInterrupt
    handler, so the command would finish regardless (a suite started as a background job of a
    non-interactive shell runs with SIGINT ignored, as POSIX has it)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Proc:
    """A tefuse command in its own session, its stderr collected line by line."""

    def __init__(self, args: list[str], env: dict):
        self.p = subprocess.Popen([sys.executable, "-m", "tefuse", *args], env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True, start_new_session=True,
                                  preexec_fn=_default_sigint)
        self.lines: list[str] = []
        self.seen: dict[int, psutil.Process] = {}
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.p.stderr:
            self.lines.append(line.rstrip("\n"))

    def note_children(self) -> None:
        try:
            for c in psutil.Process(self.p.pid).children(recursive=True):
                self.seen.setdefault(c.pid, c)
        except psutil.NoSuchProcess:
            pass

    def interrupt(self, mode: str) -> float:
        self.note_children()
        if mode == "group":
            os.killpg(self.p.pid, signal.SIGINT)
        else:
            os.kill(self.p.pid, signal.SIGINT)
        return time.monotonic()

    def survivors(self) -> list[str]:
        return alive(self.seen.values())

    def kill_all(self) -> None:
        for c in [*self.seen.values()]:
            try:
                c.kill()
            except psutil.NoSuchProcess:
                pass
        if self.p.poll() is None:
            self.p.kill()


def _wait_for(procs: list[Proc], ready, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not all(ready(p) for p in procs):
        for p in procs:
            p.note_children()
            assert p.p.poll() is None, f"ended before it could be interrupted: {p.lines[-5:]}"
        assert time.monotonic() < deadline, f"not ready in {timeout}s: {[p.lines[-2:] for p in procs]}"
        time.sleep(0.1)


def _check_interrupted(procs: list[Proc], sent: list[float], command: str) -> None:
    for p, t in zip(procs, sent):
        try:
            p.p.wait(timeout=max(0.1, t + PROMPT_SECONDS - time.monotonic()))
        except subprocess.TimeoutExpired:
            pytest.fail(f"tefuse {command} still running {PROMPT_SECONDS}s after SIGINT: {p.lines[-3:]}")
        elapsed = time.monotonic() - t
        time.sleep(0.2)  # the stderr reader's last lines
        text = "\n".join(p.lines)
        assert p.p.returncode == 130, f"exit code {p.p.returncode}: {text[-800:]}"
        assert "Traceback" not in text and "Exception ignored" not in text, text[-2000:]
        assert p.lines[-1] == f"tefuse {command}: interrupted", text[-500:]
        assert elapsed < PROMPT_SECONDS
    deadline = time.monotonic() + 5  # a worker's parent watchdog polls twice a second
    while any(p.survivors() for p in procs) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [s for p in procs for s in p.survivors()], "workers outlived the interrupted command"


def test_ctrl_c_ends_a_build_promptly(tmp_path):
    model = conv_stack(tmp_path / "stack.onnx")
    procs, sent = [], []
    try:
        for k, mode in enumerate(MODES):
            env = dict(os.environ, TEFUSE_CACHE_DIR=str(tmp_path / f"kc{k}"), TEFUSE_BUILD_JOBS="2")
            procs.append(Proc(["build", str(model), "-v", "--no-progress", "-o", str(tmp_path / f"m{k}.tefuse")],
                              env))
        _wait_for(procs, lambda p: any("] built " in ln for ln in p.lines))  # compiling, kernels left
        sent = [p.interrupt(mode) for p, mode in zip(procs, MODES)]
        _check_interrupted(procs, sent, "build")
        for k, p in enumerate(procs):  # no artefact, whole or half-written
            assert not any("saved" in ln for ln in p.lines)
            assert not [f for f in os.listdir(tmp_path) if f.startswith(f"m{k}")]
    finally:
        for p in procs:
            p.kill_all()


def _log_records(path) -> int:
    if not path.exists():
        return 0
    lines = path.read_text().splitlines()
    for ln in lines:
        json.loads(ln)  # whole lines only
    return len(lines)


# a minute of tuning workers; test_ctrl_c_ends_a_build_promptly checks the handler by default
@pytest.mark.slow
def test_ctrl_c_ends_a_tune_promptly_and_keeps_the_log_whole(tmp_path):
    procs, logs = [], [tmp_path / f"t{k}.jsonl" for k in range(len(MODES))]
    try:
        for k in range(len(MODES)):
            env = dict(os.environ, TEFUSE_CACHE_DIR=str(tmp_path / f"kc{k}"))
            procs.append(Proc(["tune", "conv2d(k=16,r=3,pad=1)+bias+relu", "--input", "1x16x16x16", "--target", "llvm",
                               "--trials", "400", "--tuner", "random", "--log", str(logs[k]), "-j", "2",
                               "--no-progress"], env))
        # records written: workers up, a batch in flight
        _wait_for(procs, lambda p: _log_records(logs[procs.index(p)]) > 0)
        time.sleep(0.5)
        sent = [p.interrupt(mode) for p, mode in zip(procs, MODES)]
        _check_interrupted(procs, sent, "tune")
        for path in logs:
            assert _log_records(path) > 0
    finally:
        for p in procs:
            p.kill_all()
