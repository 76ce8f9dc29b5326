"""Worker processes that cannot outlive the tuner.

Why: a `tefuse tune` killed with SIGKILL runs no cleanup, and a worker busy in a compile or a
measurement (or blocked where it would not notice its task pipe close) would run on as an orphan.
Each worker asks the kernel, first thing, to SIGKILL it when its parent dies (Linux
PR_SET_PDEATHSIG), and exits at once if the parent is already gone.
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int) -> None:
    """Run in a worker (a pool initializer): SIGKILL this process when `parent_pid` dies.

    The kernel ties the signal to the thread that started the worker; the pools start theirs
    from threads that live as long as the pool."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):  # no prctl: the task pipe's EOF still ends idle workers
            pass
    if os.getppid() != parent_pid:  # the parent died before the request was made
        os._exit(1)
