"""Progress bars for model builds and tuning (tqdm), on stderr.

Bars show only when stderr is a terminal and `--no-progress` was not given. Log lines go
through `write_line`, which prints above an active bar (tqdm.write) instead of through it.
"""
from __future__ import annotations

import sys
import threading
from typing import Callable, Optional

_enabled = True
_bars: list = []
_lock = threading.Lock()


def configure(enabled: bool = True) -> None:
    global _enabled
    _enabled = enabled


def enabled() -> bool:
    """Whether bars are shown now: asked for, stderr a terminal, and tqdm installed."""
    if not _enabled:
        return False
    try:
        if not sys.stderr.isatty():
            return False
        import tqdm  # noqa: F401  (installed?)
    except (ImportError, AttributeError, ValueError):
        return False
    return True


def bar(total: Optional[int], desc: str, unit: str = "it", *, initial: int = 0, leave: bool = False):
    """A tqdm bar on stderr (closed by close_all at the latest), or None when bars are off.
    initial: steps done before the bar (not counted in its rate); leave: keep its last state
    on the screen when it closes."""
    if not enabled():
        return None
    from tqdm import tqdm

    b = tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=leave, dynamic_ncols=True, initial=initial)
    with _lock:
        _bars.append(b)
    return b


def close(b) -> None:
    if b is None:
        return
    with _lock:
        if b in _bars:
            _bars.remove(b)
    b.close()


def close_all() -> None:
    with _lock:
        bars = list(_bars)
        _bars.clear()
    for b in bars:
        b.close()


def write_line(msg: str) -> None:
    """One line on stderr, above any progress bar."""
    if _bars:
        from tqdm import tqdm

        tqdm.write(msg, file=sys.stderr)
    else:
        sys.stderr.write(msg + "\n")
        sys.stderr.flush()


def build_progress(desc: str = "compiling kernels") -> tuple[Optional[Callable[[int, int], None]], Callable[[], None]]:
    """(callback for build(progress=...), finish): a bar that appears on the first compiled kernel."""
    if not enabled():
        return None, lambda: None
    state: dict = {}

    def update(done: int, total: int) -> None:
        b = state.get("bar")
        if b is None:
            b = state["bar"] = bar(total, desc, unit="kernel")
            if b is None:
                return
        if b.total != total:  # a later compile's count (the next batch profile's build) replaces it
            b.total = total
        b.n = done
        b.refresh()

    return update, lambda: close(state.get("bar"))
