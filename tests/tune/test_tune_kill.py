"""A `tefuse tune` killed with SIGKILL (no handler runs) leaves no worker process behind: its build
workers (TVM's popen pool) and its measuring worker die with it."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest


def _tree(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _cmdline(p: psutil.Process) -> str:
    """p's command line, "" once it has exited (a zombie included: a short-lived child of the
    tuner may end between the listing and this read, on a loaded machine)."""
    try:
        return " ".join(p.cmdline())
    except psutil.NoSuchProcess:  # ZombieProcess is one
        return ""


def _alive(procs: list[psutil.Process]) -> list[str]:
    out = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(f"{p.pid} {_cmdline(p)[:120]}")
        except psutil.NoSuchProcess:
            pass
    return out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux process semantics")
def test_sigkill_of_tune_leaves_no_workers(tmp_path):
    env = dict(os.environ, TEFUSE_CACHE_DIR=str(tmp_path / "kc"))
    cmd = [sys.executable, "-m", "tefuse", "tune", "conv2d(k=16,r=3,pad=1)+bias+relu", "--input", "1x16x16x16",
           "--target", "llvm", "--trials", "400", "--tuner", "random", "--log", str(tmp_path / "t.jsonl"),
           "-j", "2", "--no-progress"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # (its own group: a leak cannot hide in ours)
    try:
        workers: dict[int, psutil.Process] = {}
        deadline = time.time() + 240
        # wait for both kinds: build workers (tvm.exec.popen_worker) and the measuring worker
        while time.time() < deadline:
            for p in _tree(proc.pid):
                workers.setdefault(p.pid, p)
            cmds = [_cmdline(p) for p in workers.values() if p.is_running()]
            if (sum("popen_worker" in c for c in cmds) >= 2 and any("multiprocessing" in c for c in cmds)
                    and len((tmp_path / "t.jsonl").read_bytes() if (tmp_path / "t.jsonl").exists() else b"") > 0):
                break
            assert proc.poll() is None, "tefuse tune ended before its workers were seen"
            time.sleep(0.2)
        else:
            pytest.fail(f"workers not seen in time: {[_cmdline(p)[:80] for p in workers.values()]}")
        time.sleep(1.0)  # mid-run: builds in flight
        for p in _tree(proc.pid):
            workers.setdefault(p.pid, p)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.time() + 5
        while _alive(list(workers.values())) and time.time() < deadline:
            time.sleep(0.1)
        assert not _alive(list(workers.values())), f"survived the tuner: {_alive(list(workers.values()))}"
    finally:
        if proc.poll() is None:
            proc.kill()
        for p in _tree(proc.pid):  # tidy up on failure
            try:
                p.kill()
            except psutil.NoSuchProcess:
                pass
