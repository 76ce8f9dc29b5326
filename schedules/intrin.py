"""Register tensor intrinsics with TVM once per process, by name, and parse them quickly.

TVM keeps intrinsics in one process-wide table, so the modules that define intrinsics
(cuda/intrin/, rocm/mfma.py) name theirs through `register_once` instead of each keeping its own
record of what it registered: the first request for a name makes and registers the pair, later
ones only return the name.

Making one parses TVMScript, and TVMScript's `@T.prim_func` starts with `inspect.stack()`: the
source line of every frame up the stack, each found through `inspect.getmodule`, which scans
`sys.modules` for a frame with no file of its own (importlib's frozen frames). Importing TVM's
own library of intrinsics (`tvm.s_tir.tensor_intrin`, 510 of them, on the first tensor-core
kernel of a process) took 30 s that way, most of a cold build. The parser reads the source line
of the three innermost frames only (whether the function is a method of a TVMScript class) and
the names and locals of the others (closure variables): `quick_frames` gives it exactly that.
"""
from __future__ import annotations

import contextlib
import inspect
import sys
import threading
from typing import Callable, Iterator

from tvm.s_tir import TensorIntrin
from tvm.tirx import PrimFunc

_lock = threading.RLock()  # re-entrant: a `make` may itself ask for another intrinsic
_registered: set[str] = set()
SOURCE_FRAMES = 3  # innermost frames whose source line TVMScript's parser reads


def _stack(context: int = 1) -> list[inspect.FrameInfo]:
    """inspect.stack() with source lines for the innermost SOURCE_FRAMES frames only."""
    out = []
    frame = sys._getframe(1)
    while frame is not None:
        if len(out) < SOURCE_FRAMES:
            info = inspect.getframeinfo(frame, context)
            out.append(inspect.FrameInfo(frame, *info, positions=info.positions))
        else:
            out.append(inspect.FrameInfo(frame, frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name,
                                         None, None, positions=None))
        frame = frame.f_back
    return out


_frames_lock = threading.RLock()


@contextlib.contextmanager
def quick_frames() -> Iterator[None]:
    """TVMScript parsed without scanning every frame's module (see the module's docstring).
    Process-wide while it lasts: another thread's inspect.stack() then lacks the source lines
    of its outer frames, nothing else."""
    with _frames_lock:
        real = inspect.stack
        inspect.stack = _stack
        try:
            yield
        finally:
            inspect.stack = real


def register_once(name: str, make: Callable[[], tuple[PrimFunc, PrimFunc]]) -> str:
    """Register the (desc, impl) pair `make()` returns as `name` the first time this process asks
    for `name` (overriding an entry of that name already in TVM's table); return `name`."""
    if name in _registered:
        return name
    with _lock:
        if name not in _registered:
            with quick_frames():
                desc, impl = make()
            TensorIntrin.register(name, desc, impl, override=True)
            _registered.add(name)
    return name
