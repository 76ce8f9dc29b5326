"""Saved artefacts that must not load: another tefuse/TVM version, a bad or edited plan, missing or
damaged members, missing constants, a truncated archive. Each is an ArtifactError naming the file
(never a raw tarfile/JSON/KeyError, never a SIGBUS from a truncated library). And saving a graph
whose kernels came from the kernel cache (or from an artefact) works."""
from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile

import numpy as np
import pytest
import tvm

import tefuse
from tefuse import GraphBuilder
from tefuse.cli import main
from tefuse.codegen.cache import KernelCache
from tefuse.runtime import artifact
from tefuse.runtime.artifact import ArtifactError

CHAIN, SHAPE = "conv2d(k=8,r=3,pad=1)+bias+relu", (1, 4, 8, 8)


@pytest.fixture(scope="module")
def compiled():
    """conv + bias + relu with constant weights (so the artefact has constants)."""
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x = b.input("x", SHAPE)
    w = b.const(rng.standard_normal((8, 4, 3, 3)).astype(np.float32), name="w")
    bias = b.const(rng.standard_normal(8).astype(np.float32), name="bias")
    y = b.relu(b.op("bias_add", b.conv2d(x, w, padding=1), bias, axis=1))
    return tefuse.build(b.build(y), "llvm")


@pytest.fixture
def saved(compiled, tmp_path):
    d = tmp_path / "m"
    artifact.save(compiled, d, as_directory=True)
    return d


def _plan(d):
    return json.loads((d / "plan.json").read_text())


def _write_plan(d, plan, *, reseal: bool = True):
    if reseal:
        plan["checksum"] = artifact._plan_checksum(plan)
    (d / "plan.json").write_text(json.dumps(plan))


def _reseal_member(d, plan, name):
    import hashlib

    data = (d / name).read_bytes()
    plan["files"][name] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def test_plan_records_versions_and_checksums(saved):
    plan = _plan(saved)
    assert plan["tefuse_version"] == tefuse.__version__ and plan["tvm_version"] == tvm.__version__
    assert set(plan["files"]) == {"constants.npz", "kernels/k000.so", "kernels/k000.tir"}
    assert plan["checksum"] == artifact._plan_checksum(plan)


@pytest.mark.parametrize("field,value,words", [("tefuse_version", "0.0.1", "saved by tefuse 0.0.1 "),
                                               ("tvm_version", "0.1.0", "saved by tefuse .* with TVM 0.1.0;")])
def test_another_version_is_refused(saved, field, value, words):
    plan = _plan(saved)
    plan[field] = value
    _write_plan(saved, plan)
    with pytest.raises(ArtifactError, match=f"plan.json: {words}.*rebuild"):
        artifact.load(saved)


def test_an_older_format_is_refused(saved):
    plan = _plan(saved)
    plan["version"] = 1
    _write_plan(saved, plan)
    with pytest.raises(ArtifactError, match=r"plan.json: format 'tefuse-artifact' version 1; .* versions 2, 3 and 4"):
        artifact.load(saved)


@pytest.mark.parametrize("text", ["", "{", "[1, 2]", '{"format": "tefuse-artifact"'])
def test_bad_plan_json(saved, text):
    (saved / "plan.json").write_text(text)
    with pytest.raises(ArtifactError, match=r"plan.json: (not valid JSON|not a tefuse plan)"):
        artifact.load(saved)


def test_edited_shape_is_refused_by_the_plan_checksum(saved):
    plan = _plan(saved)
    (x,) = [n for n in plan["nodes"] if n["name"] == "x"]
    x["shape"] = [1, 4, 16, 16]
    _write_plan(saved, plan, reseal=False)
    with pytest.raises(ArtifactError, match="plan.json: checksum mismatch"):
        artifact.load(saved)


def test_edited_constant_shape_is_refused_even_with_a_resealed_plan(saved):
    plan = _plan(saved)
    (w,) = [n for n in plan["nodes"] if n["name"] == "w"]
    w["shape"] = [8, 4, 1, 1]
    _write_plan(saved, plan)
    with pytest.raises(ArtifactError, match=r"constants.npz: constant c\d of node 'w' is float32\[8, 4, 3, 3\], "
                                            r"the plan says float32\[8, 4, 1, 1\]"):
        artifact.load(saved)


def test_missing_plan_field_is_an_artefact_error(saved):
    plan = _plan(saved)
    del plan["kernels"][0]["group"]
    _write_plan(saved, plan)
    with pytest.raises(ArtifactError, match=r"plan.json: malformed plan \(KeyError: 'group'\)"):
        artifact.load(saved)


def test_missing_constants(saved):
    (saved / "constants.npz").unlink()
    with pytest.raises(ArtifactError, match="constants.npz: missing from the artefact"):
        artifact.load(saved)


def test_a_constant_missing_from_the_archive(saved):
    plan = _plan(saved)
    with np.load(saved / "constants.npz") as z:
        kept = {k: z[k] for k in z.files[1:]}
    np.savez(saved / "constants.npz", **kept)
    _reseal_member(saved, plan, "constants.npz")
    _write_plan(saved, plan)
    with pytest.raises(ArtifactError, match=r"constants.npz: constant c0 of node '\w+' is missing"):
        artifact.load(saved)


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_damaged_kernel_never_reaches_dlopen(saved, damage):
    """Loaded in a child: a truncated library that reached dlopen would SIGBUS the process."""
    lib = saved / "kernels" / "k000.so"
    data = bytearray(lib.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    else:
        data[len(data) // 2] ^= 0xFF
    lib.write_bytes(bytes(data))
    code = ("from tefuse.runtime import artifact\nimport sys\n"
            "try:\n    artifact.load(sys.argv[1])\nexcept artifact.ArtifactError as e:\n    print('ERR', e)\n")
    p = subprocess.run([sys.executable, "-c", code, str(saved)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "ERR" in p.stdout and "kernels/k000.so: checksum mismatch" in p.stdout


def test_truncated_tar_is_an_artefact_error_naming_it(compiled, tmp_path):
    t = tmp_path / "m.tar"
    artifact.save(compiled, t)
    data = t.read_bytes()
    for cut in (600, len(data) // 3, len(data) // 2):  # (past the last member is only padding)
        bad = tmp_path / f"cut{cut}.tar"
        bad.write_bytes(data[:cut])
        with pytest.raises(ArtifactError, match=str(bad)):
            artifact.load(bad)


def test_damaged_member_of_a_tar_is_named_inside_the_archive(compiled, tmp_path):
    t = tmp_path / "m.tar"
    artifact.save(compiled, t)
    out = tmp_path / "bad.tar"
    with tarfile.open(t) as src, tarfile.open(out, "w") as dst:
        for m in src.getmembers():
            f = src.extractfile(m)
            data = f.read() if f else None
            if m.name == "kernels/k000.tir":
                data = data[:-10]
                m.size = len(data)
            dst.addfile(m, io.BytesIO(data) if data is not None else None)
    with pytest.raises(ArtifactError, match=rf"{out}:kernels/k000.tir: checksum mismatch"):
        artifact.load(out)


def test_save_after_a_kernel_cache_hit(compiled, tmp_path, rng):
    """A module loaded from the kernel cache cannot be exported again: its library is copied."""
    cache = KernelCache(tmp_path / "kc")
    g = compiled.graph
    first = tefuse.build(g, "llvm", cache=cache)
    again = tefuse.build(g, "llvm", cache=cache)
    assert all(k.from_cache and k.library for k in again.kernels)
    artifact.save(again, tmp_path / "a.tar")
    loaded = artifact.load(tmp_path / "a.tar")
    x = rng.standard_normal(SHAPE).astype(np.float32)
    np.testing.assert_array_equal(loaded.run(x)[0], first.run(x)[0])
    artifact.save(loaded, tmp_path / "b", as_directory=True)  # and a loaded artefact saves again
    np.testing.assert_array_equal(artifact.load(tmp_path / "b").run(x)[0], first.run(x)[0])


def test_cli_build_output_after_a_cache_hit(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TEFUSE_CACHE_DIR", str(tmp_path / "kc"))
    args = ["build", CHAIN, "-i", "x".join(map(str, SHAPE)), "--no-db"]
    assert main(args) == 0
    assert main(args + ["-o", str(tmp_path / "c.tar")]) == 0
    capsys.readouterr()
    assert main(["run", str(tmp_path / "c.tar"), "--repeat", "0"]) == 0
    assert "output" in capsys.readouterr().out
