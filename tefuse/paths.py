"""Where tefuse keeps files between runs, and the environment variables that move them: read
here, by the layers that open the files, so no compiler layer reads the environment itself."""
from __future__ import annotations

import os
from pathlib import Path


def _user_cache() -> Path:
    """The user cache directory (platformdirs: on Linux $XDG_CACHE_HOME/tefuse, ~/.cache/tefuse
    by default)."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("tefuse", appauthor=False))


def kernel_cache_dir() -> Path:
    """$TEFUSE_CACHE_DIR, else kernels/ in the user cache directory."""
    if os.environ.get("TEFUSE_CACHE_DIR"):
        return Path(os.environ["TEFUSE_CACHE_DIR"]).expanduser()
    return _user_cache() / "kernels"


def check_kernel_dir() -> Path:
    """checks/ in the user cache directory: the output checks' counting kernels an RPC server
    runs (tune/remote_check.py), one per type, rank and target, built once."""
    return _user_cache() / "checks"


def zoo_cache_dir() -> Path:
    """zoo/ in the user cache directory: the model zoo's ONNX exports (tefuse/bench/zoo.py),
    kept between runs because exporting a network takes longer than checking it."""
    return _user_cache() / "zoo"


def transfer_model_dir() -> Path:
    """transfer/ in the user cache directory: cost models trained on the tuning logs
    (tune/transfer.py), kept by the logs' content hash so a build trains once per log set."""
    return _user_cache() / "transfer"


def generated_source_dir() -> Path:
    """generated/ in the user cache directory: Python modules tefuse writes from the installed
    TVM's source at run time (TVMScript reads its functions' source from real files)."""
    return _user_cache() / "generated"


def probe_directory(parent: Path, name: str) -> None:
    """Create and remove a file named after `name` in `parent`: whether a file there can be
    written, asked before long work rather than found out after it. Raises OSError."""
    import tempfile

    fd, probe = tempfile.mkstemp(dir=parent, prefix=f".{name}.", suffix=".probe")
    os.close(fd)
    os.unlink(probe)
