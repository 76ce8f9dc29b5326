"""Batch profiles: a model with a dynamic batch dim built for several batch sizes into one
artefact; running picks the profile by the inputs' shapes; a shape no profile has is one line."""
from __future__ import annotations

import json
import tarfile

import numpy as np
import pytest
from onnx import TensorProto, helper

import tefuse
from tefuse.cli import main
from tefuse.errors import BuildError
from tefuse.frontend.onnx import dynamic_batch_inputs
from tefuse.runtime import artifact
from tefuse.runtime.artifact import ArtifactError
from tefuse.runtime.profiles import NoMatchingProfile, ProfiledGraph

from .models import dynamic_mlp

ort = pytest.importorskip("onnxruntime")


def _reference(path, x):
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


@pytest.fixture
def env(tmp_path, tefuse_dirs):
    return tmp_path


@pytest.fixture
def built(env, capsys):
    """The CLI's artefact of the dynamic model at batch 1 and 4."""
    model = dynamic_mlp(env / "mlp.onnx")
    out = env / "mlp.tefuse"
    assert main(["build", str(model), "--batch", "4,1", "-o", str(out)]) == 0
    capsys.readouterr()
    return model, out


def test_one_artefact_holds_a_profile_per_batch_size(built):
    _, out = built
    with tarfile.open(out) as tar:
        index = json.load(tar.extractfile("plan.json"))
        assert index["version"] == 3 and [p["batch"] for p in index["profiles"]] == [1, 4]
        for p in index["profiles"]:
            plan = json.load(tar.extractfile(f"{p['dir']}/plan.json"))
            (x,) = [n for n in plan["nodes"] if n["name"] == "x"]
            assert x["shape"] == [p["batch"], 6]
            assert f"{p['dir']}/plan.json" in index["files"]


def test_running_picks_the_profile_of_the_inputs(built, rng):
    model, out = built
    pg = tefuse.load(out)
    assert isinstance(pg, ProfiledGraph) and pg.batch_sizes == (1, 4)
    for n in (1, 4):
        x = rng.standard_normal((n, 6)).astype(np.float32)
        (y,) = pg.run({"x": x})
        assert y.shape == (n, 3)
        np.testing.assert_allclose(y, _reference(model, x), rtol=1e-5, atol=1e-6)
    with pytest.raises(NoMatchingProfile, match=r"no batch profile matches the inputs \(x 3x6\); "
                                                r"built for batch sizes 1, 4 \(x Nx6\)"):
        pg.run(np.zeros((3, 6), np.float32))


def test_cli_runs_each_profile_and_refuses_batch_3_in_one_line(built, capsys):
    model, out = built
    x4 = np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32)
    np.save(model.parent / "x4.npy", x4)
    np.save(model.parent / "x3.npy", np.zeros((3, 6), np.float32))
    res = model.parent / "y.npz"
    assert main(["run", str(out), "--input", f"x={model.parent / 'x4.npy'}", "--iterations", "0",
                 "-o", str(res)]) == 0
    assert "batch 4:" in capsys.readouterr().out
    with np.load(res) as z:
        assert z.files == ["batch4/y"]
        np.testing.assert_allclose(z["batch4/y"], _reference(model, x4), rtol=1e-5, atol=1e-6)

    assert main(["run", str(out), "--input", f"x={model.parent / 'x3.npy'}"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == ("tefuse run: error: no batch profile matches the inputs (x 3x6); "
                       "built for batch sizes 1, 4 (x Nx6)")
    assert not any("Traceback" in ln for ln in err)
    assert main(["run", str(out), "--batch", "3"]) == 1
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(
        "no profile for batch 3; built for batch sizes 1, 4")


def test_run_builds_and_checks_every_profile_and_reports_them_in_json(env, capsys):
    model = dynamic_mlp(env / "mlp.onnx")
    report = env / "r.json"
    assert main(["run", str(model), "--batch", "2,3", "--check", "--iterations", "1", "--json", str(report)]) == 0
    out = capsys.readouterr().out
    assert out.count("-> OK") == 2 and "batch 2:" in out and "batch 3:" in out
    data = json.loads(report.read_text())
    assert [p["batch"] for p in data["profiles"]] == [2, 3] and data["ok"] is True
    assert [p["outputs"][0]["shape"] for p in data["profiles"]] == [[2, 3], [3, 3]]


def test_batch_needs_a_dynamic_batch_dim(env, capsys):
    model = dynamic_mlp(env / "static.onnx", batch=2)
    assert main(["build", str(model), "--batch", "1,2"]) == 2
    assert capsys.readouterr().err.strip() == ("tefuse build: error: --batch: batch sizes need an input with a "
                                               "dynamic leading (batch) dim; the model's inputs have fixed ones "
                                               "(x is 2x6)")
    for bad in ("0,1", "1,1", "1,x", ""):
        assert main(["build", str(model), "--batch", bad]) == 2
        assert "--batch" in capsys.readouterr().err


def test_an_artefact_without_profiles_refuses_batch(env, capsys):
    out = env / "one.tefuse"
    assert main(["build", "relu", "-i", "1x2x3x3", "-o", str(out), "--no-db"]) == 0
    assert main(["run", str(out), "--batch", "2"]) == 2
    assert "has no batch profiles" in capsys.readouterr().err


@pytest.mark.parametrize("dim", [dict(dim_param="batch"), dict(dim_value=0), dict(dim_value=-1), {}])
def test_dynamic_batch_dims_as_exporters_write_them(dim):
    vi = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6])
    d = vi.type.tensor_type.shape.dim[0]
    d.Clear()
    for k, v in dim.items():
        setattr(d, k, v)
    fixed = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 6])
    g = helper.make_graph([], "g", [vi, fixed], [])
    assert dynamic_batch_inputs(helper.make_model(g)) == ["x"]


def test_python_api_builds_saves_and_loads_profiles(env, rng):
    model = dynamic_mlp(env / "mlp.onnx")
    pg = tefuse.build(tefuse.import_onnx_profiles(model, [2, 1]), "llvm")
    assert isinstance(pg, ProfiledGraph) and pg.batch_sizes == (1, 2)
    info = tefuse.save(pg, env / "p.tefuse")
    assert info.batch_sizes == (1, 2) and info.num_kernels == pg.num_kernels
    loaded = tefuse.load(env / "p.tefuse")
    x = rng.standard_normal((2, 6)).astype(np.float32)
    np.testing.assert_array_equal(loaded.run(x=x)[0], pg.run(x=x)[0])
    np.testing.assert_allclose(loaded.run(x=x)[0], _reference(model, x), rtol=1e-5, atol=1e-6)
    assert loaded.profile(2).graph.inputs[0].shape == (2, 6)


def test_python_api_takes_a_function_of_the_batch_size(rng):
    b = tefuse.GraphBuilder

    def graph(n):
        g = b()
        return g.build(g.relu(g.input("x", (n, 5))))

    pg = tefuse.build(graph, "llvm", batch_sizes=[3, 1])
    x = rng.standard_normal((3, 5)).astype(np.float32)
    np.testing.assert_array_equal(pg.run(x)[0], np.maximum(x, 0))
    with pytest.raises(BuildError, match="batch_sizes needs a graph per batch size"):
        tefuse.build(graph(1), "llvm", batch_sizes=[1, 2])
    with pytest.raises(BuildError, match="needs batch_sizes"):
        tefuse.build(graph, "llvm")


def _profile_damage(built, tmp_path):
    """The artefact unpacked into a directory, to damage one member of one profile."""
    d = tmp_path / "unpacked"
    with tarfile.open(built[1]) as tar:
        tar.extractall(d, filter="data")
    return d


def test_a_damaged_member_of_one_profile_is_never_loaded(built, tmp_path):
    d = _profile_damage(built, tmp_path)
    lib = d / "batch4" / "kernels" / "k000.so"
    data = bytearray(lib.read_bytes())
    data[len(data) // 2] ^= 0xFF  # (flipped, not truncated: a truncated one that got through would SIGBUS)
    lib.write_bytes(bytes(data))
    with pytest.raises(ArtifactError, match=r"batch4/kernels/k000.so: checksum mismatch"):
        artifact.load(d)


def test_an_edited_profile_plan_is_refused_even_resealed(built, tmp_path):
    d = _profile_damage(built, tmp_path)
    plan = json.loads((d / "batch1" / "plan.json").read_text())
    plan["outputs"] = plan["outputs"][:0]
    plan["checksum"] = artifact._plan_checksum(plan)  # its own checksum fits; the index's sha256 does not
    (d / "batch1" / "plan.json").write_text(json.dumps(plan))
    with pytest.raises(ArtifactError, match=r"batch1/plan.json: checksum mismatch"):
        artifact.load(d)


def test_a_version_2_artefact_still_loads(env, rng):
    """Version 2 had one graph in the layout a version-3 graph has: made here as it wrote it."""
    g = tefuse.GraphBuilder()
    w = g.const(rng.standard_normal((5, 4)).astype(np.float32), name="w")
    cg = tefuse.build(g.build(g.relu(g.dense(g.input("x", (2, 4)), w))), "llvm")
    d = env / "v2"
    artifact.save(cg, d, as_directory=True)
    plan = json.loads((d / "plan.json").read_text())
    assert plan["version"] == 3 and "profiles" not in plan
    plan["version"] = 2
    plan["checksum"] = artifact._plan_checksum(plan)
    (d / "plan.json").write_text(json.dumps(plan))
    loaded = artifact.load(d)
    assert not isinstance(loaded, ProfiledGraph)
    x = rng.standard_normal((2, 4)).astype(np.float32)
    np.testing.assert_allclose(loaded.run(x)[0], np.maximum(x @ w.value.T, 0), rtol=1e-5, atol=1e-6)


def test_tune_tunes_every_batch_size_into_one_log(env, capsys):
    log = env / "t.jsonl"
    assert main(["tune", "conv2d(k=4,r=3,pad=1)+relu", "-i", "1x4x6x6", "--batch", "1,2", "--trials", "1",
                 "--tuner", "random", "--log", str(log), "-j", "1"]) == 0
    out = capsys.readouterr().out
    assert "batch 1: " in out and "batch 2: " in out
    shapes = {json.loads(ln)["workload"].split("|")[1] for ln in log.read_text().splitlines()}
    assert shapes == {"1x4x6x6", "2x4x6x6"}
