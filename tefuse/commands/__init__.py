"""CLI subcommands, one module each (build, tune, db, bench, run...).

A command module has `add_parser(subparsers)` and a `run(args)` returning the exit code.
Modules import TVM, numpy and the rest of tefuse inside their functions, so that
`tefuse --help` stays fast.
"""
from ..errors import TefuseError


class UsageError(TefuseError):
    """The command line itself is wrong (a bad option value or combination): exit code 2,
    as argparse's own usage errors."""
