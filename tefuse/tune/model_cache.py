"""Files of bytes by key in a directory, written so that a crash or a damaged disk never hands a
reader a half or corrupted entry: the transfer cost models (tune/transfer.py) are kept here.

Why a checksum on top of the atomic rename: a rename makes a torn write invisible, but not a
file truncated or overwritten after the fact (a full disk, a copy cut short, a user's editor);
a reader that cannot trust what it loads must check it. An entry that fails the check is
ignored (and retrained by the caller), never loaded.
"""
from __future__ import annotations

import hashlib
import logging
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

log = logging.getLogger(__name__)

MAGIC = b"tefuse-model/1\n"
_KEY = re.compile(r"^[A-Za-z0-9_.-]+$")


@dataclass(frozen=True)
class ModelCache:
    """Entries under `root`, one file per key (key: letters, digits, `_.-`)."""

    root: Path

    def path(self, key: str) -> Path:
        if not _KEY.match(key):
            raise ValueError(f"model cache key {key!r} holds characters other than letters, digits, _.-")
        return self.root / f"{key}.bin"

    def load(self, key: str) -> Optional[bytes]:
        """The entry's bytes, or None where it is missing, unreadable or fails its checksum."""
        path = self.path(key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as e:
            log.warning("model cache %s: cannot read (%s); ignoring it", path, e.strerror or e)
            return None
        head = len(MAGIC) + 32
        if len(data) < head or not data.startswith(MAGIC) or \
                hashlib.sha256(data[head:]).digest() != data[len(MAGIC):head]:
            log.warning("model cache %s is damaged; ignoring it", path)
            return None
        return data[head:]

    def store(self, key: str, payload: bytes) -> None:
        """Write through a temp file, fsync and rename; a cache that cannot be written is only
        slower, so failures are logged, not raised."""
        path = self.path(key)
        tmp = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            with os.fdopen(fd, "wb") as f:
                f.write(MAGIC + hashlib.sha256(payload).digest() + payload)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
            tmp = None
        except OSError as e:
            log.warning("model cache %s: cannot write (%s)", path, e.strerror or e)
        finally:
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)
