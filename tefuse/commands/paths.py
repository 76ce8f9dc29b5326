"""Output paths of the commands, checked before the work they would hold the result of."""
from __future__ import annotations

import os
from pathlib import Path

from ..errors import TefuseError
from ..paths import probe_directory


def check_output_path(path: str, option: str) -> None:
    """Refuse, in one line, an output file that cannot be written (no such directory, a
    read-only or special file system such as /proc, a directory in the way): probed by
    creating and removing a file beside it, so a long build or run is not lost at the end."""
    p = Path(path).expanduser()
    parent = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        raise TefuseError(f"{option} {path}: is a directory")
    if not parent.is_dir():
        raise TefuseError(f"{option} {path}: no directory {str(parent)!r}")
    try:
        probe_directory(parent, p.name)
    except OSError as e:
        raise TefuseError(f"{option} {path}: cannot write in {str(parent)!r} ({e.strerror or e})") from None
    if p.exists() and not os.access(p, os.W_OK):
        raise TefuseError(f"{option} {path}: the file is read-only")


def write_failed(path: str, option: str, e: OSError) -> TefuseError:
    """The one-line error for an output that could not be written after all."""
    return TefuseError(f"{option} {path}: cannot write ({e.strerror or e})")
