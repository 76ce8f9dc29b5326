"""Worker processes that cannot outlive the tuner.

Why: a `tefuse tune` killed with SIGKILL runs no cleanup, and a worker busy in a compile or a
measurement (or blocked where it would not notice its task pipe close) would run on as an orphan.
Each worker starts a watchdog thread, first thing, that ends the process once its parent is gone.
(Not Linux's PR_SET_PDEATHSIG: that fires when the parent *thread* that started the worker exits,
and the parallel runner starts its measuring processes from short-lived threads.)
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time

POLL_SECONDS = 0.5


def die_with_parent(parent_pid: int) -> None:
    """Run in a worker (a pool initializer): exit as soon as `parent_pid` is no longer its parent."""
    if os.getppid() != parent_pid:  # the parent died before the watchdog started
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(POLL_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="tefuse-die-with-parent", daemon=True).start()



def without_torch() -> None:
    """Run in a worker before anything imports TVM: `import torch` fails from then on, unless
    torch is loaded already.

    Why: tvm_ffi imports torch at its own import whenever torch is installed (for its DLPack
    exchange). Build workers and measuring processes never touch torch, and it cost each 4-5 s
    of start-up and about 600 MB (`import tvm` alone: 7.7 s and 845 MB with torch, 2.9 s and
    208 MB without). Marked absent, it is as if torch were not installed.
    """
    sys.modules.setdefault("torch", None)


def ignore_sigint() -> None:
    """Run in a worker (first thing in its initializer): a Ctrl-C, which the terminal sends to
    the whole process group, reaches the tuner alone, which then ends its workers itself
    (instead of each dying half-way with a traceback of its own)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)

class WorkersClosed(RuntimeError):
    """The builder or runner was closed (the tuner was interrupted) while a batch was in
    flight: that batch has no results to record."""


def kill_pool(pool) -> None:
    """End a ProcessPoolExecutor's workers now (one hung or killed mid-measurement) and shut it
    down without waiting for them."""
    for proc in list((getattr(pool, "_processes", None) or {}).values()):  # None once shut down
        proc.kill()
    pool.shutdown(wait=False, cancel_futures=True)
