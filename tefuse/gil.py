"""How a build's threads share the GIL.

A build schedules and compiles kernels on several threads. Each call into TVM lets the GIL go
and takes it back on return; under CPython's default 5 ms switch interval a returning thread
waits for whichever thread is running Python to give it up, so a thread making thousands of
short TVM calls spends most of its time waiting (the convoy effect: 20 kernels' codegen beside
one busy Python thread took minutes instead of 3 s, and 0.1 ms brought it back to 5 s). A build
shortens the interval while its threads run and puts it back after.
"""
from __future__ import annotations

import sys
import threading
from contextlib import contextmanager
from typing import Iterator

BUILD_SWITCH_INTERVAL = 1e-4  # seconds: sys.setswitchinterval's, while a build runs

_lock = threading.Lock()
_depth = 0
_saved = 0.0


@contextmanager
def quick_gil_handoff() -> Iterator[None]:
    """sys.setswitchinterval(BUILD_SWITCH_INTERVAL) within (never longer than it was), the
    caller's interval restored when the last of any nested or concurrent uses ends."""
    global _depth, _saved
    with _lock:
        if _depth == 0:
            _saved = sys.getswitchinterval()
            sys.setswitchinterval(min(BUILD_SWITCH_INTERVAL, _saved))
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                sys.setswitchinterval(_saved)
