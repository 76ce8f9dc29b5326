"""Child processes as the interrupt and kill tests see them (psutil)."""
from __future__ import annotations

import psutil


def cmdline(p: psutil.Process) -> str:
    """p's command line, "" once it has exited (a zombie included: a short-lived child may end
    between the listing and this read, on a loaded machine)."""
    try:
        return " ".join(p.cmdline())
    except psutil.NoSuchProcess:  # ZombieProcess is one
        return ""


def alive(procs) -> list[str]:
    """'pid command' of each process still running (zombies are not)."""
    out = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(f"{p.pid} {cmdline(p)[:120]}")
        except psutil.NoSuchProcess:
            pass
    return out
