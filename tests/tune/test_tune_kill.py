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

from tests.procs import alive, cmdline


def _tree(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


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
            cmds = [cmdline(p) for p in workers.values() if p.is_running()]
            if (sum("popen_worker" in c for c in cmds) >= 2 and any("multiprocessing" in c for c in cmds)
                    and len((tmp_path / "t.jsonl").read_bytes() if (tmp_path / "t.jsonl").exists() else b"") > 0):
                break
            assert proc.poll() is None, "tefuse tune ended before its workers were seen"
            time.sleep(0.2)
        else:
            pytest.fail(f"workers not seen in time: {[cmdline(p)[:80] for p in workers.values()]}")
        time.sleep(1.0)  # mid-run: builds in flight
        for p in _tree(proc.pid):
            workers.setdefault(p.pid, p)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.time() + 5
        while alive(list(workers.values())) and time.time() < deadline:
            time.sleep(0.1)
        assert not alive(list(workers.values())), f"survived the tuner: {alive(list(workers.values()))}"
    finally:
        if proc.poll() is None:
            proc.kill()
        for p in _tree(proc.pid):  # tidy up on failure
            try:
                p.kill()
            except psutil.NoSuchProcess:
                pass
