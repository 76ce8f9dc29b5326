"""`tefuse tune`'s graph options: the kernels it tunes are the ones a build with the same options
looks up."""
from __future__ import annotations

import pytest

from tefuse.cli import main
from tefuse.tune.database import Database
from tests.commands.models import sibling_convs


@pytest.mark.parametrize("flag, env, merged", [("--horizontal", "0", True), ("--no-horizontal", "1", False),
                                               (None, "1", True)])
def test_horizontal_tunes_the_sibling_convs_a_build_merges(tmp_path, tefuse_dirs, monkeypatch, flag, env, merged):
    """--horizontal (over $TEFUSE_HORIZONTAL, as build's) merges the two sibling convs of 8
    channels into the one product of 16 the build runs, so that is the conv kernel tuned."""
    model, log = tmp_path / "siblings.onnx", tmp_path / "t.jsonl"
    sibling_convs(model)
    monkeypatch.setenv("TEFUSE_HORIZONTAL", env)
    argv = ["tune", str(model), "-t", "llvm", "--trials", "2", "--tuner", "random", "-j", "1", "--log", str(log),
            "--no-progress"]
    assert main(argv + ([flag] if flag else [])) == 0
    shapes = {r.workload.split("|")[1] for r in Database(log).records() if "conv2d" in r.workload}
    assert shapes == ({"1x16x8x8"} if merged else {"1x8x8x8"})  # NCHW
