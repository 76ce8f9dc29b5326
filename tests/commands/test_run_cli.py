"""`tefuse run`: ONNX models built, run and checked against onnxruntime through the CLI entry."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tefuse.cli import main
from tefuse.frontend.randomize import randomize_constant_weights

pytest.importorskip("onnxruntime")


def _constant_fill_model(path):
    """conv (weight a ConstantOfShape fill, as the ONNX zoo's light models store it) + relu +
    global pool: every output equals every other."""
    nodes = [helper.make_node("ConstantOfShape", ["wshape"], ["w"],
                              value=numpy_helper.from_array(np.array([0.1], np.float32))),
             helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["y"])]
    g = helper.make_graph(nodes, "fill", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 1, 1])],
                          [numpy_helper.from_array(np.array([4, 3, 3, 3], np.int64), "wshape")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), str(path))
    return path


def test_a_constant_reference_is_flagged_and_random_weights_fix_it(tmp_path, capsys):
    path = _constant_fill_model(tmp_path / "fill.onnx")
    assert main(["run", str(path), "--check", "--repeat", "0"]) == 0
    out = capsys.readouterr()
    assert "is constant" in out.err and "--random-weights" in out.err
    assert main(["run", str(path), "--check", "--repeat", "0", "--random-weights"]) == 0
    out = capsys.readouterr()
    assert "1 constant-fill weights replaced" in out.err and "is constant" not in out.err
    assert "-> OK" in out.out


def test_randomized_weights_are_seeded(tmp_path):
    model = onnx.load(str(_constant_fill_model(tmp_path / "fill.onnx")))
    (a, n), (b, _), (c, _) = (randomize_constant_weights(model, s) for s in (0, 0, 1))
    w = [numpy_helper.to_array(next(i for i in m.graph.initializer if i.name == "w")) for m in (a, b, c)]
    assert n == 1 and w[0].shape == (4, 3, 3, 3)
    np.testing.assert_array_equal(w[0], w[1])
    assert not np.array_equal(w[0], w[2])
    assert not any(node.op_type == "ConstantOfShape" for node in a.graph.node)


def test_random_weights_need_an_onnx_model(tmp_path, capsys):
    assert main(["run", str(tmp_path / "model.tar"), "--random-weights"]) == 2
    assert "need the .onnx model" in capsys.readouterr().err


# -- timing, profile, JSON, inputs and outputs --------------------------------------------
from .models import small_cnn, two_inputs  # noqa: E402


@pytest.fixture
def cnn(tmp_path, tefuse_dirs):
    return str(small_cnn(tmp_path / "cnn.onnx"))


def test_run_prints_latency_statistics_and_throughput(cnn, capsys):
    assert main(["run", cnn, "--warmup", "2", "--iterations", "7"]) == 0
    out = capsys.readouterr()
    lines = out.out.splitlines()
    assert len(lines) == 5, out.out  # fusion (2), latency, throughput, one output
    lat, thr = lines[2], lines[3]
    for stat in ("min", "mean", "median", "p90", "p99", "max"):
        assert f" {stat} " in lat
    assert "(7 runs in " in lat and "after 2 warm-up" in lat
    assert thr.startswith("throughput: ") and "runs/s" in thr and "samples/s at batch 1" in thr
    assert out.err.count("\n") == 2  # imported ..., built ...


def test_run_for_a_duration_and_without_timing(cnn, capsys):
    assert main(["run", cnn, "--duration", "0.2"]) == 0
    lat = capsys.readouterr().out.splitlines()[2]
    runs = int(lat.split("(")[1].split()[0])
    assert runs >= 2  # a run of this model takes well under 0.1 s
    assert main(["run", cnn, "--iterations", "0"]) == 0
    assert "latency" not in capsys.readouterr().out


def test_profile_table_has_a_row_per_kernel(cnn, capsys):
    assert main(["run", cnn, "--iterations", "0", "--profile"]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("kernel "))
    assert lines[head].split() == ["kernel", "fused", "ops", "template", "config", "time", "(ms)", "share"]
    rows = lines[head + 1:head + 7]
    assert len(rows) == 6 and lines[head + 7].startswith("total ") and lines[head + 7].endswith("100.0%")
    shares = [float(r.split()[-1].rstrip("%")) for r in rows]
    times = [float(r.split()[-2]) for r in rows]
    assert times == sorted(times, reverse=True) and abs(sum(shares) - 100) < 0.5
    assert any(" conv2d+relu " in r and " fallback #" in r for r in rows)
    assert main(["run", cnn, "--iterations", "0", "--profile", "--top", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("kernel "))
    assert lines[head + 3].startswith("(4 more)") and lines[head + 4].startswith("total ")


def _check_type(value, kind, where):
    if isinstance(kind, tuple):
        assert any(_matches(value, k) for k in kind), f"{where}: {value!r} is not one of {kind}"
    else:
        assert _matches(value, kind), f"{where}: {value!r} is not {kind}"


def _matches(value, kind) -> bool:
    if kind is None:
        return value is None
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def _check(obj, schema, where="report"):
    """A small structural check: dict schemas list every key, [schema] is a list of those."""
    if isinstance(schema, dict):
        assert isinstance(obj, dict) and set(obj) == set(schema), f"{where}: keys {sorted(obj)} != {sorted(schema)}"
        for k, sub in schema.items():
            _check(obj[k], sub, f"{where}.{k}")
    elif isinstance(schema, list):
        assert isinstance(obj, list), where
        for i, x in enumerate(obj):
            _check(x, schema[0], f"{where}[{i}]")
    elif isinstance(schema, Nullable):
        if obj is not None:
            _check(obj, schema.inner, where)
    else:
        _check_type(obj, schema, where)


class Nullable:
    def __init__(self, inner):
        self.inner = inner


# the schema documented in tefuse/commands/run.py's docstring
RUN_SCHEMA = {
    "schema": str, "tefuse": str, "model": str, "target": str,
    "inputs": [{"name": str, "dtype": str, "shape": [int], "source": str}],
    "build": {"kernels": int, "ops": int, "onnx_nodes": (int, None), "tuned": int, "predicted": int,
              "fallback": int, "seconds": (float, None)},
    "timing": Nullable({"warmup": int, "iterations": int, "seconds": float, "min_ms": float, "mean_ms": float,
                        "median_ms": float, "p90_ms": float, "p99_ms": float, "max_ms": float,
                        "throughput_per_s": float, "batch": (int, None), "samples_per_s": (float, None)}),
    "profile": Nullable([{"kernel": str, "ops": [str], "template": str, "config_index": int, "config": str,
                          "time_ms": float, "share": float}]),
    "outputs": [{"name": str, "dtype": str, "shape": [int], "mean": float}],
    "check": Nullable([{"name": str, "max_abs": (float, None), "max_rel": (float, None), "ok": bool}]),
    "bisect": Nullable({"tensor": str, "node": str, "op_type": str, "error": (float, None), "reason": str,
                        "builds": int}),
    "ok": bool,
}


def test_json_report_follows_the_documented_schema(cnn, tmp_path, capsys):
    import json

    import tefuse.commands.run as R

    for key in RUN_SCHEMA:  # every key is documented
        assert f'"{key}"' in R.__doc__, key
    out = tmp_path / "report.json"
    assert main(["run", cnn, "--iterations", "4", "--profile", "--check", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    _check(report, RUN_SCHEMA)
    assert report["schema"] == "tefuse-run/1" and report["ok"] is True
    assert report["timing"]["iterations"] == 4 and report["build"]["kernels"] == len(report["profile"]) == 6
    t = report["timing"]
    assert t["min_ms"] <= t["median_ms"] <= t["p90_ms"] <= t["p99_ms"] <= t["max_ms"]
    assert abs(sum(r["share"] for r in report["profile"]) - 1) < 1e-6
    assert report["inputs"] == [{"name": "x", "dtype": "float32", "shape": [1, 3, 8, 8], "source": "random"}]
    assert report["check"][0]["ok"] and report["outputs"][0]["shape"] == [1, 5]
    assert main(["run", cnn, "--iterations", "0", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    _check(report, RUN_SCHEMA)
    assert report["timing"] is None and report["profile"] is None and report["check"] is None


def _two(tmp_path):
    rng = np.random.default_rng(1)
    x, y = (rng.standard_normal((2, 3)).astype("float32") for _ in range(2))
    return str(two_inputs(tmp_path / "two.onnx")), x, y


def test_inputs_from_npy_and_npz_and_outputs_to_npz(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TEFUSE_CACHE_DIR", str(tmp_path / "kernels"))
    model, x, y = _two(tmp_path)
    want = {"sum/relu": np.maximum(x + y, 0), "prod": x * y}
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    np.savez(tmp_path / "both.npz", x=x, y=y)
    np.savez(tmp_path / "only_y.npz", anything=y)
    for inputs in (["x=" + str(tmp_path / "x.npy"), "y=" + str(tmp_path / "y.npy")],
                   [str(tmp_path / "both.npz")],
                   ["x=" + str(tmp_path / "both.npz"), "y=" + str(tmp_path / "only_y.npz")]):
        out = tmp_path / "out.npz"
        argv = ["run", model, "--iterations", "0", "-o", str(out)]
        for i in inputs:
            argv += ["--input", i]
        assert main(argv) == 0, capsys.readouterr().err
        with np.load(out) as got:
            assert sorted(got.files) == sorted(want)
            for k in want:
                np.testing.assert_allclose(got[k], want[k], rtol=1e-6)


@pytest.mark.parametrize("inputs,message", [
    (["x=both.npz", "x=x.npy"], "given twice"),
    (["z=x.npy"], "unknown input(s) ['z']"),
    (["x=three.npz"], "none named 'x'"),
    (["x.npy"], "needs a name"),
    (["x=missing.npy"], "--input x: no such file 'missing.npy'"),
    (["x=notes.txt"], "--input x: cannot read 'notes.txt': not a .npy or .npz file"),
])
def test_bad_inputs_are_usage_errors(tmp_path, capsys, monkeypatch, inputs, message):
    model, x, y = _two(tmp_path)
    monkeypatch.chdir(tmp_path)
    np.save("x.npy", x)
    np.savez("both.npz", x=x, y=y)
    np.savez("three.npz", a=x, b=y, c=y)
    (tmp_path / "notes.txt").write_text("not an array\n")
    argv = ["run", model, "--iterations", "0"]
    for i in inputs:
        argv += ["--input", i]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_bisect_names_the_node_that_departs(tmp_path, capsys, monkeypatch):
    """A failed --check with --bisect names the first ONNX node whose value departs. The
    reference is sabotaged at one node (its Add computed as Sub), so tefuse departs there."""
    import json

    from tefuse.frontend import reference
    from tests.bench.test_bisect import chain

    path = tmp_path / "chain.onnx"
    onnx.save(chain(12), str(path))
    real = reference.onnxruntime_outputs

    def sabotaged(model, feeds):
        model = onnx.ModelProto.FromString(model.SerializeToString())
        for n in model.graph.node:
            if n.name == "n7":
                n.op_type = "Sub"
        return real(model, feeds)

    monkeypatch.setattr(reference, "onnxruntime_outputs", sabotaged)
    out = tmp_path / "r.json"
    assert main(["run", str(path), "--check", "--bisect", "--repeat", "0", "--json", str(out)]) == 1
    assert "first divergence at 't7' (node 'n7', Add)" in capsys.readouterr().out
    report = json.loads(out.read_text())
    _check(report, RUN_SCHEMA)
    assert report["bisect"]["node"] == "n7" and report["bisect"]["builds"] <= 2


def _relu_model(path):
    nodes = [helper.make_node("Relu", ["x"], ["y"])]
    g = helper.make_graph(nodes, "relu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [24, 40])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [24, 40])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), str(path))
    return str(path)


def test_a_predicted_config_shows_in_the_group_list_profile_and_json(tefuse_dirs, tmp_path, monkeypatch, capsys):
    """Records of the template on other workloads (the user log): the unseen kernel's config is the
    transfer model's, shown as `predicted` by --verbose-groups, --profile and --json."""
    from tefuse.tune.database import Database
    from tests.tune.test_transfer import synthetic_records

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("TEFUSE_TRANSFER", "1")
    Database(tefuse_dirs / "user.jsonl").append_many(synthetic_records([(8, 32), (64, 64), (16, 128)]))
    model = _relu_model(tmp_path / "relu.onnx")
    out_json = tmp_path / "r.json"
    assert main(["run", model, "--iterations", "0", "--verbose-groups", "--profile", "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    assert ", predicted]" in out and " predicted #" in out
    import json
    report = json.loads(out_json.read_text())
    _check(report, RUN_SCHEMA)
    assert report["build"]["predicted"] == 1 and report["build"]["fallback"] == 0
    assert report["profile"][0]["config"] == "predicted"
    monkeypatch.delenv("TEFUSE_TRANSFER")
    assert main(["run", model, "--iterations", "0", "--verbose-groups", "--no-cache"]) == 0
    assert ", fallback]" in capsys.readouterr().out
