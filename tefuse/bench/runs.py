"""What the bench command lines share: a JSON report written whole or not at all, and
`--shard K/N` (every N-th case from the K-th: N processes, one a GPU, merged afterwards)."""
from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Optional, Sequence

from ..options import ENV as OPTION_ENV

# what a build reads from the environment besides its arguments: the tuning databases, the
# option switches and the opset ONNX models are upgraded to; a report's command line carries
# those set, so it says which records made it. (TVM_CUDA_COMPILE_MODE is not among them: tefuse
# sets it itself wherever nvcc is on the PATH, target.ensure_cuda_compiler.)
BUILD_ENV = ("TEFUSE_USER_DB", "TEFUSE_SYSTEM_DB", *OPTION_ENV, "TEFUSE_ONNX_UPGRADE_OPSET")


def command_line(module: str, argv: Sequence[str]) -> str:
    """`python -m module argv...` as a shell line, led by the BUILD_ENV variables set."""
    env = [f"{k}={os.environ[k]}" for k in BUILD_ENV if k in os.environ]
    return shlex.join([*env, "python", "-m", module, *argv])


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
