"""The scale-out tuning bench on the CPU: the same job with 1 and 2 measuring processes."""
import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tefuse.bench import scaleout


def _tiny(path):
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype("float32"), "w")
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                           helper.make_node("Relu", ["c"], ["y"])], "tiny",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], [w])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


def test_scaleout_bench_spreads_the_job_and_writes_trials_per_minute(tmp_path, capsys):
    model = _tiny(tmp_path / "tiny.onnx")
    out = tmp_path / "scaleout.json"
    assert scaleout.main(["--devices", "0,1", "--model", str(model), "-t", "llvm", "--trials", "4",
                          "--tuner", "random", "-j", "2", "--json", str(out)]) == 0
    (r,) = json.loads(out.read_text())["runs"]
    assert (r["devices"], r["n_devices"], r["target"]) == ("0,1", 2, "llvm")
    assert r["trials"] == 4 * r["tasks"] and r["seconds"] > 0 and r["trials_per_minute"] > 0
    assert 0 < r["measure_seconds"] < r["seconds"] and 0 < r["build_seconds"] < r["seconds"]
    assert set(r["counts"]) == {"cpu:0", "cpu:1"} and sum(r["counts"].values()) == r["trials"]
    assert set(r["device_use"]) == {"cpu:0", "cpu:1"} and all(0 < u < 1 for u in r["device_use"].values())
    assert "trials/min" in capsys.readouterr().out


def test_report_compares_each_run_with_the_first():
    runs = [scaleout.ScaleoutResult("0", 1, "cuda-sm_90", "m", 28, 448, 120.0, 40.0, 80.0),
            scaleout.ScaleoutResult("0,1", 2, "cuda-sm_90", "m", 28, 448, 80.0, 40.0, 40.0)]
    out = scaleout.report(runs)
    assert [r["trials_per_minute"] for r in out["runs"]] == [224.0, 336.0]
    assert out["speedup_vs_first"] == [1.0, 1.5]


def test_the_default_model_is_resnet50s_kernels():
    tasks = scaleout.tasks_of(scaleout.zoo_resnet50(), "llvm")
    assert len(tasks) >= 20 and any(t.info.anchor_kind == "conv2d" for t in tasks)


# starts a tracker and servers
@pytest.mark.slow
def test_a_tracker_listing_other_than_the_servers_expected_is_refused(tmp_path, capsys):
    import pytest

    from tefuse.tune.rpc import start_local_rpc

    rpc = start_local_rpc("tefuse-count", servers=2)
    try:
        where = f"127.0.0.1:{rpc.tracker_port}"
        assert scaleout.servers_listed(where, "tefuse-count") == 2
        with pytest.raises(SystemExit):
            scaleout.main(["--rpc", where, "--key", "tefuse-count", "--servers", "1", "--model",
                           str(_tiny(tmp_path / "tiny.onnx")), "-t", "llvm"])
        assert "lists 2 free server(s) under 'tefuse-count', not --servers 1" in capsys.readouterr().err
    finally:
        rpc.close()
