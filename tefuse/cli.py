"""The `tefuse` command line. Each subcommand lives in tefuse/commands/<name>.py and
registers itself through `add_parser(subparsers)`; `run(args)` returns an exit code."""
from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
import sys

from . import commands
from .errors import TefuseError


def _load_commands():
    mods = []
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        mod = importlib.import_module(f"{commands.__name__}.{info.name}")
        if hasattr(mod, "add_parser"):
            mods.append(mod)
    return mods


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="tefuse", description="Fuse operator chains into GPU kernels with TVM.")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv for debug)")
    sub = parser.add_subparsers(dest="command", required=True)
    for mod in _load_commands():
        mod.add_parser(sub)
    args = parser.parse_args(argv)
    level = logging.WARNING - 10 * min(args.verbose, 2) if args.verbose else logging.INFO
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    try:
        return int(args.func(args) or 0)
    except TefuseError as e:
        print(f"tefuse {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
