"""`tefuse cache`: where tefuse keeps its files, and clearing the kernel cache.

    tefuse cache info     the kernel cache (entries, size) and the tuning databases (records)
    tefuse cache clear    remove every compiled kernel from the cache (tuning records are kept)

The user tuning database lives in the user data directory, the kernels in the user cache
directory (platformdirs; on Linux ~/.local/share/tefuse and ~/.cache/tefuse). TEFUSE_USER_DB,
TEFUSE_SYSTEM_DB and TEFUSE_CACHE_DIR move them.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path


def add_parser(sub) -> None:
    p = sub.add_parser("cache", help="where the kernel cache and tuning databases are; clear the kernel cache")
    csub = p.add_subparsers(dest="cache_command", required=True, metavar="{info,clear}")
    pi = csub.add_parser("info", help="kernel cache and tuning databases: paths, sizes, records")
    pi.set_defaults(func=run_info)
    pc = csub.add_parser("clear", help="remove every compiled kernel from the cache (tuning records stay)")
    pc.set_defaults(func=run_clear)


def _size(n: int) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return ""


def _entries(root: Path) -> tuple[int, int]:
    files = [f for f in root.glob("*/*") if f.is_file() and f.suffix in (".so", ".src")]
    return sum(f.suffix == ".so" for f in files), sum(f.stat().st_size for f in files)


def _from(var: str) -> str:
    return f" (from ${var})" if os.environ.get(var) is not None else ""


def run_info(args: argparse.Namespace) -> int:
    from ..paths import kernel_cache_dir
    from ..tune.database import Database, system_db_paths, user_db_path

    root = kernel_cache_dir()
    n, size = _entries(root) if root.is_dir() else (0, 0)
    print(f"kernel cache:     {root}{_from('TEFUSE_CACHE_DIR')}: {n} kernels, {_size(size)}")
    user = user_db_path()
    recs = f"{len(Database(user).records())} records" if user.is_file() else "not created yet"
    print(f"user tuning log:  {user}{_from('TEFUSE_USER_DB')}: {recs}")
    system = system_db_paths()
    if not system:
        print(f"shipped logs:     none{_from('TEFUSE_SYSTEM_DB')}")
    for k, p in enumerate(system):
        label = "shipped logs:" if k == 0 else ""
        print(f"{label:<17} {p}{_from('TEFUSE_SYSTEM_DB') if k == 0 else ''}: {len(Database(p).records())} records")
    return 0


def run_clear(args: argparse.Namespace) -> int:
    from ..codegen.cache import KernelCache
    from ..paths import kernel_cache_dir

    root = kernel_cache_dir()
    if not root.is_dir():
        print(f"{root}: no kernel cache")
        return 0
    _, size = _entries(root)
    n = KernelCache(root).clear()
    print(f"{root}: removed {n} kernels ({_size(size)})")
    return 0
