"""`tefuse cache info|clear`, and that every environment variable is in the reference."""
from __future__ import annotations

import re
from pathlib import Path

from tefuse.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_cache_info_and_clear(tmp_path, capsys, tefuse_dirs):
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"kernel cache:     {tmp_path / 'kernels'} (from $TEFUSE_CACHE_DIR): 0 kernels, 0 B"
    assert out[1] == f"user tuning log:  {tmp_path / 'user.jsonl'} (from $TEFUSE_USER_DB): not created yet"
    assert out[2].startswith("shipped logs:     none")
    assert main(["build", "conv2d(k=8,r=1)+relu", "-i", "1x4x8x8", "--no-db"]) == 0
    assert main(["build", "conv2d(k=8,r=3,pad=1)+relu", "-i", "1x4x8x8", "--no-db"]) == 0
    capsys.readouterr()
    assert main(["cache", "info"]) == 0
    assert ": 2 kernels, " in capsys.readouterr().out.splitlines()[0]
    assert main(["cache", "clear"]) == 0
    assert "removed 2 kernels" in capsys.readouterr().out
    assert not list((tmp_path / "kernels").glob("*/*.so"))
    assert main(["cache", "info"]) == 0
    assert ": 0 kernels, 0 B" in capsys.readouterr().out


def test_every_environment_variable_is_documented_in_the_reference():
    """Every TEFUSE_* / TVM_* variable the code reads appears in docs/reference.md."""
    read = set()
    for f in (ROOT / "tefuse").rglob("*.py"):
        read |= set(re.findall(r"environ(?:\.get)?\(?\[?[\"']((?:TEFUSE|TVM)_[A-Z_]+)", f.read_text()))
    assert {"TEFUSE_USER_DB", "TEFUSE_SYSTEM_DB", "TEFUSE_CACHE_DIR", "TEFUSE_BUILD_JOBS",
            "TVM_CUDA_COMPILE_MODE"} <= read
    reference = (ROOT / "docs" / "reference.md").read_text()
    assert not [v for v in sorted(read) if f"`{v}`" not in reference]


def test_clearing_a_read_only_cache_is_one_line(tmp_path, capsys, tefuse_dirs, monkeypatch):
    import errno
    import pathlib

    for name in ("ab/ab01.so", "ab/ab01.meta", "cd/cd02.so"):
        (tmp_path / "kernels" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "kernels" / name).write_bytes(b"x")

    def read_only(self, missing_ok=False):
        raise OSError(errno.EROFS, "Read-only file system", str(self))

    monkeypatch.setattr(pathlib.Path, "unlink", read_only)
    assert main(["cache", "clear"]) == 1
    cap = capsys.readouterr()
    lines = cap.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in cap.err, cap.err
    assert lines[0].startswith(f"tefuse cache clear: error: kernel cache {tmp_path / 'kernels'}: "
                               "cannot remove 3 file(s) (Read-only file system: "), lines[0]
    assert "0 kernel(s) removed" in lines[0]
    assert (tmp_path / "kernels" / "ab" / "ab01.so").exists()
