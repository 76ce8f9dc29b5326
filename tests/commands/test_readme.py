"""The README's snippets: every Python block runs as written (on the CPU), and every `tefuse`
command line in its shell blocks parses (its options exist)."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tefuse.cli import make_parser

README = Path(__file__).resolve().parents[2] / "README.md"


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", README.read_text(), flags=re.S | re.M)


def test_the_readme_has_the_snippets_this_test_reads():
    assert len(_blocks("python")) >= 3 and len(_blocks("sh")) >= 2


@pytest.mark.parametrize("k", range(len(_blocks("python"))))
def test_python_snippet_runs_as_written(k, tmp_path):
    env = {**os.environ, "TEFUSE_CACHE_DIR": str(tmp_path / "kernels"), "TEFUSE_USER_DB": str(tmp_path / "u.jsonl")}
    res = subprocess.run([sys.executable, "-c", _blocks("python")[k]], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]


def _command_lines() -> list[str]:
    out = []
    for block in _blocks("sh"):
        for line in block.splitlines():
            line = line.strip()
            if line.startswith("tefuse "):
                out.append(line)
    return out


@pytest.mark.parametrize("line", _command_lines())
def test_shell_command_parses(line):
    argv = shlex.split(line, comments=True)
    argv = argv[1:argv.index("|")] if "|" in argv else argv[1:]
    if argv == ["--version"]:
        return
    make_parser().parse_args(argv)  # a SystemExit (unknown option) fails the test
