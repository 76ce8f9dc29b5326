"""What the bench command lines share: a JSON report written whole or not at all, and
`--shard K/N` (every N-th case from the K-th: N processes, one a GPU, merged afterwards)."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Optional, Sequence


def write_json_whole(path, data: dict) -> None:
    """Write `data` to `path` through a temporary file: a run cut off keeps the previous
    complete report, never half of one."""
    path = Path(path)
    tmp = path.with_name(path.name + ".part")
    tmp.write_text(json.dumps(data, indent=1, default=str) + "\n")
    os.replace(tmp, path)


def shard_of(text: str) -> tuple[int, int]:
    """'K/N' as (K, N), 1 <= K <= N (ValueError otherwise)."""
    k, sep, n = text.partition("/")
    if not (sep and k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n)):
        raise ValueError(f"want K/N with 1 <= K <= N, got {text!r}")
    return int(k), int(n)


def sharded(names: Sequence, shard: Optional[tuple[int, int]]) -> list:
    """Every N-th name from the K-th (shard (K, N)); all of them without one."""
    return list(names) if shard is None else list(names)[shard[0] - 1::shard[1]]
