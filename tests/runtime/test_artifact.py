"""Saved compiled graphs: a round trip runs the same kernels and keeps their sources."""
from __future__ import annotations

import json

import numpy as np
import pytest

import tefuse
from tefuse.cli import main
from tefuse.plan.spec import parse_chain
from tefuse.runtime import artifact
from tefuse.runtime.artifact import ArtifactError

CHAIN, SHAPE = "conv2d(k=8,r=3,pad=1)+bias+batch_norm+relu", (1, 4, 8, 8)


def _feeds(cg, rng):
    return {i.name: rng.standard_normal(i.shape).astype(i.dtype) for i in cg.graph.inputs}


@pytest.mark.parametrize("as_tar", [False, True])
def test_llvm_round_trip_runs_the_same_kernels(tmp_path, rng, as_tar):
    cg = tefuse.build(parse_chain(CHAIN, SHAPE), "llvm")
    path = tmp_path / ("model.tar" if as_tar else "model")
    info = artifact.save(cg, path, as_directory=not as_tar)
    assert (info.num_kernels, info.is_directory) == (cg.num_kernels, not as_tar)
    loaded = artifact.load(path)
    feeds = _feeds(cg, rng)
    np.testing.assert_array_equal(loaded.run(**feeds)[0], cg.run(**feeds)[0])
    assert [k.tir for k in loaded.kernels] == [k.tir for k in cg.kernels]
    assert all(k.from_cache for k in loaded.kernels)


def test_cuda_artefact_keeps_each_kernel_source(tmp_path):
    """The CUDA source is saved beside each library: a library loaded back no longer holds it."""
    cg = tefuse.build(parse_chain(CHAIN, SHAPE), "cuda")
    artifact.save(cg, tmp_path / "m", as_directory=True)
    plan = json.loads((tmp_path / "m" / "plan.json").read_text())
    (entry,) = plan["kernels"]
    assert (tmp_path / "m" / entry["source_file"]).read_text() == cg.kernels[0].source("cuda")
    assert "__global__" in cg.kernels[0].device_source


def test_llvm_artefact_has_no_device_source_file(tmp_path):
    cg = tefuse.build(parse_chain(CHAIN, SHAPE), "llvm")
    artifact.save(cg, tmp_path / "m", as_directory=True)
    plan = json.loads((tmp_path / "m" / "plan.json").read_text())
    assert [k["source_file"] for k in plan["kernels"]] == [None]
    assert not list((tmp_path / "m" / "kernels").glob("*.src"))


def test_bad_artefacts_are_clear_errors(tmp_path):
    cg = tefuse.build(parse_chain(CHAIN, SHAPE), "llvm")
    with pytest.raises(ArtifactError, match="no artefact at"):
        artifact.load(tmp_path / "nothing")
    (tmp_path / "junk.bin").write_bytes(b"not a tar")
    with pytest.raises(ArtifactError, match="neither a directory nor a tar"):
        artifact.load(tmp_path / "junk.bin")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ArtifactError, match="no plan.json"):
        artifact.load(tmp_path / "empty")
    d = tmp_path / "m"
    artifact.save(cg, d, as_directory=True)
    plan = json.loads((d / "plan.json").read_text())
    (d / plan["kernels"][0]["file"]).unlink()
    with pytest.raises(ArtifactError, match="k000.so: missing from the artefact"):
        artifact.load(d)
    plan["version"] = 99
    (d / "plan.json").write_text(json.dumps(plan))
    with pytest.raises(ArtifactError, match="version 99"):
        artifact.load(d)


def test_cli_saves_and_runs_an_artefact(tmp_path, capsys):
    out = tmp_path / "chain.tar"
    assert main(["build", CHAIN, "-i", "x".join(map(str, SHAPE)), "-o", str(out), "--no-db", "--no-cache"]) == 0
    capsys.readouterr()
    assert main(["run", str(out), "--repeat", "0"]) == 0
    text = capsys.readouterr()
    assert "loaded 1 kernels from" in text.err and "output " in text.out


@pytest.mark.gpu
def test_cuda_round_trip_gpu(tmp_path, rng):
    cg = tefuse.build(parse_chain(CHAIN, SHAPE), "cuda")
    artifact.save(cg, tmp_path / "m.tar")
    loaded = artifact.load(tmp_path / "m.tar")
    feeds = _feeds(cg, rng)
    np.testing.assert_array_equal(loaded.run(**feeds)[0], cg.run(**feeds)[0])
    assert loaded.kernels[0].source("cuda") == cg.kernels[0].source("cuda")
