"""Register tensor intrinsics with TVM once per process, by name.

TVM keeps intrinsics in one process-wide table, and making one parses TVMScript (tenths of a
second each), so the modules that define intrinsics (cuda/intrin/, rocm/mfma.py) name theirs
through `register_once` instead of each keeping its own record of what it registered: the first
request for a name makes and registers the pair, later ones only return the name.
"""
from __future__ import annotations

import threading
from typing import Callable

from tvm.s_tir import TensorIntrin
from tvm.tirx import PrimFunc

_lock = threading.RLock()  # re-entrant: a `make` may itself ask for another intrinsic
_registered: set[str] = set()


def register_once(name: str, make: Callable[[], tuple[PrimFunc, PrimFunc]]) -> str:
    """Register the (desc, impl) pair `make()` returns as `name` the first time this process asks
    for `name` (overriding an entry of that name already in TVM's table); return `name`."""
    if name in _registered:
        return name
    with _lock:
        if name not in _registered:
            desc, impl = make()
            TensorIntrin.register(name, desc, impl, override=True)
            _registered.add(name)
    return name
