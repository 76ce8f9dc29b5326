"""The `tefuse` command line. Each subcommand lives in tefuse/commands/<name>.py and
registers itself through `add_parser(subparsers)`; `run(args)` returns an exit code.

Output: results on stdout; logging on stderr, one line per stage by default (`-q`: warnings
only, `-v`: a line per kernel, `-vv`: debug). `-q`, `-v`, `--debug` and `--no-progress` are
accepted before and after the subcommand.

Exit codes: 0 success, 1 a tefuse error (one line; the traceback with `--debug`) or a failed
check, 2 a usage error, 130 interrupted. A closed pipe (`tefuse db list | head`) ends quietly.

Start-up is kept fast (`tefuse --help` loads neither TVM nor numpy): command modules import
what they need inside `run`.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import os
import pkgutil
import sys
from typing import Optional

from . import commands
from .commands import UsageError
from .errors import TefuseError
from .tune.procs import without_torch

VERBOSE = logging.INFO - 5  # as tefuse.driver.VERBOSE; not imported from there (that loads TVM)
_COMMON = ("verbose", "quiet", "debug", "no_progress")
# commands that load PyTorch (the bench's peers); the others start without it (tune/procs.py)
_USES_TORCH = frozenset({"bench"})


def _load_commands():
    mods = []
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        mod = importlib.import_module(f"{commands.__name__}.{info.name}")
        if hasattr(mod, "add_parser"):
            mods.append(mod)
    return mods


def versions() -> list[str]:
    """tefuse's, TVM's and the CUDA compiler's versions, one a line (for --version, bug reports)."""
    from importlib import metadata

    from .version import __version__

    try:
        tvm_version = metadata.version("apache-tvm")
    except metadata.PackageNotFoundError:
        import tvm

        tvm_version = tvm.__version__
    return [f"tefuse {__version__}", f"TVM {tvm_version}", f"CUDA compiler: {cuda_compiler()}",
            f"Python {sys.version.split()[0]}"]


def cuda_compiler() -> str:
    """Which compiler `-t cuda` builds use (as tefuse.target.ensure_cuda_compiler picks) and its version."""
    import shutil
    import subprocess

    mode = os.environ.get("TVM_CUDA_COMPILE_MODE")
    nvcc = shutil.which("nvcc")
    if mode == "nvrtc" or (mode is None and nvcc is None):
        why = "TVM_CUDA_COMPILE_MODE=nvrtc" if mode == "nvrtc" else "nvcc not found"
        return f"NVRTC ({why})"
    if nvcc is None:
        return f"nvcc not found (TVM_CUDA_COMPILE_MODE={mode})"
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=30).stdout
        release = next((ln.split("release", 1)[1].strip() for ln in out.splitlines() if "release" in ln), "?")
    except (OSError, subprocess.SubprocessError) as e:
        release = f"unknown ({e})"
    return f"nvcc {release} ({nvcc})"


class _Version(argparse.Action):
    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print("\n".join(versions()))
        parser.exit(0)


def _add_common_options(p: argparse.ArgumentParser, depth: int) -> None:
    """-q/-v/--debug/--no-progress on one parser; each depth has its own dest so that
    `tefuse -v run -v` counts twice (a subparser's namespace overwrites its parent's)."""
    g = p.add_argument_group("output")
    g.add_argument("-v", "--verbose", action="count", default=0, dest=f"_verbose_{depth}",
                   help="more output: -v a line per kernel, -vv debug")
    g.add_argument("-q", "--quiet", action="store_true", dest=f"_quiet_{depth}",
                   help="warnings and results only")
    g.add_argument("--debug", action="store_true", dest=f"_debug_{depth}",
                   help="show the traceback of an error")
    g.add_argument("--no-progress", action="store_true", dest=f"_no_progress_{depth}",
                   help="no progress bars (they are off anyway when stderr is not a terminal)")


def _add_to_subparsers(p: argparse.ArgumentParser, depth: int) -> None:
    for action in p._actions:  # argparse keeps subparsers only here
        if isinstance(action, argparse._SubParsersAction):
            for sp in dict.fromkeys(action.choices.values()):  # aliases map to the same parser
                _add_common_options(sp, depth)
                _add_to_subparsers(sp, depth + 1)


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tefuse", description="Fuse operator chains into GPU kernels with TVM.",
        epilog="Run `tefuse COMMAND --help` for a command's options. Environment: TEFUSE_USER_DB, "
               "TEFUSE_SYSTEM_DB, TEFUSE_CACHE_DIR, TEFUSE_BUILD_JOBS, TEFUSE_SCHEDULE_JOBS, TVM_CUDA_COMPILE_MODE "
               "(see docs/reference.md).")
    parser.add_argument("--version", action=_Version, help="print tefuse's, TVM's and the CUDA compiler's versions")
    _add_common_options(parser, 0)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for mod in _load_commands():
        mod.add_parser(sub)
    _add_to_subparsers(parser, 1)
    return parser


def _merge_common(args: argparse.Namespace) -> None:
    """Fold the per-depth -v/-q/--debug/--no-progress into args.verbose, .quiet, .debug, .no_progress."""
    found: dict[str, list] = {k: [] for k in _COMMON}
    for key in list(vars(args)):
        for name in _COMMON:
            if key.startswith(f"_{name}_"):
                found[name].append(getattr(args, key))
                delattr(args, key)
    args.verbose = sum(found["verbose"])
    for name in ("quiet", "debug", "no_progress"):
        setattr(args, name, any(found[name]))


class _Formatter(logging.Formatter):
    def __init__(self, detailed: bool):
        super().__init__()
        self.detailed = detailed

    def format(self, record: logging.LogRecord) -> str:
        msg = record.getMessage()
        if record.exc_info and self.detailed:
            msg += "\n" + self.formatException(record.exc_info)
        if self.detailed:
            return f"{record.levelname} {record.name}: {msg}"
        if record.levelno >= logging.WARNING:
            return f"{record.levelname.lower()}: {msg}"
        return msg


class CliHandler(logging.Handler):
    """Writes to the current sys.stderr (not the one at set-up: tests swap it), through
    tqdm.write while a progress bar is on screen so that the bar is redrawn below the line."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = self.format(record)
            from .commands.progress import write_line

            write_line(msg)
        except RecursionError:
            raise
        except Exception:  # noqa: BLE001 - logging must not raise
            self.handleError(record)


def setup_logging(verbose: int = 0, quiet: bool = False) -> None:
    """tefuse's loggers at the verbosity asked for, printed through one CliHandler on the root."""
    if quiet:
        level = logging.WARNING
    else:
        level = {0: logging.INFO, 1: VERBOSE}.get(verbose, logging.DEBUG)
    logging.addLevelName(VERBOSE, "VERBOSE")
    root = logging.getLogger()
    for h in [h for h in root.handlers if isinstance(h, CliHandler)]:
        root.removeHandler(h)
    handler = CliHandler()
    handler.setFormatter(_Formatter(detailed=verbose >= 2))
    root.addHandler(handler)
    # other libraries: warnings only, unless -vv
    root.setLevel(logging.INFO if verbose >= 2 and not quiet else logging.WARNING)
    logging.getLogger("tefuse").setLevel(level)


def _quiet_broken_pipe() -> None:
    """stdout's reader went away: point stdout at /dev/null so that the flush at exit is silent."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def _exit_now(code: int, grace: float = 2.0) -> None:
    """Let threads still running end for `grace` seconds, then end the process at once if one
    is left: a compile in flight on a build thread (LLVM, nvcc) cannot be stopped, and the
    interpreter's exit would wait for it. The command's cleanup has run (the tuner's workers
    are killed, logs are written line by line, files renamed into place)."""
    import threading
    import time

    deadline = time.monotonic() + grace
    for t in threading.enumerate():
        if t is not threading.main_thread() and not t.daemon:
            t.join(max(0.0, deadline - time.monotonic()))
    if not any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        return  # a normal exit: finalizers run (multiprocessing's among them)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _command_name(args: argparse.Namespace) -> str:
    parts = [args.command] + [str(v) for k, v in sorted(vars(args).items())
                              if k.endswith("_command") and k != "command" and v]
    return " ".join(parts)


def main(argv: Optional[list[str]] = None) -> int:
    parser = make_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, --version (0) and usage errors (2): argparse printed them
        return int(e.code or 0) if not isinstance(e.code, str) else 2
    _merge_common(args)
    root, tefuse_log = logging.getLogger(), logging.getLogger("tefuse")
    saved = (root.level, tefuse_log.level)
    setup_logging(args.verbose, args.quiet)
    from .commands import progress

    progress.configure(enabled=not args.no_progress)
    name = _command_name(args)
    if argv is None and args.command not in _USES_TORCH:  # a process of its own: start it 4-5 s sooner
        without_torch()
    try:
        rc = int(args.func(args) or 0)
        sys.stdout.flush()
        return rc
    except BrokenPipeError:
        _quiet_broken_pipe()
        return 141  # as a shell reports a command ended by SIGPIPE
    except UsageError as e:
        _print_error(name, e, args.debug)
        return 2
    except TefuseError as e:
        _print_error(name, e, args.debug)
        return 1
    except KeyboardInterrupt:
        progress.close_all()
        logging.disable(logging.CRITICAL)  # threads still finishing a kernel: the command is over
        print(f"tefuse {name}: interrupted", file=sys.stderr)
        if argv is None:  # the command line, not a caller in Python
            _exit_now(130)
        return 130
    finally:
        progress.close_all()
        if argv is not None:  # called from Python (tests, scripts): leave logging as it was
            logging.disable(logging.NOTSET)
            for h in [h for h in root.handlers if isinstance(h, CliHandler)]:
                root.removeHandler(h)
            root.setLevel(saved[0])
            tefuse_log.setLevel(saved[1])


def _print_error(name: str, e: BaseException, debug: bool) -> None:
    """One line (a ModelImportError adds its list of nodes); the traceback first with --debug."""
    from .commands import progress

    progress.close_all()
    if debug:
        import traceback

        traceback.print_exception(type(e), e, e.__traceback__, file=sys.stderr)
    print(f"tefuse {name}: error: {e}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
