"""TuningRecord: one JSON line per measurement, round-trips exactly, rejects malformed lines."""
import json
import math

import pytest

from tefuse.tune.record import TuningRecord


def _rec(**kw) -> TuningRecord:
    d = dict(workload="conv2d+relu|1x8x8x8|float32|abc", target="cuda-sm_90", device="NVIDIA H100 80GB HBM3",
             template="conv2d_direct", config={"tile_0": (1, 2, 2, 2), "unroll": 512}, config_index=100,
             costs=[3e-6, 1e-6, 2e-6])
    d.update(kw)
    return TuningRecord(**d)


def test_round_trip_is_one_line_and_exact():
    r = _rec(error_msg="line one\nline two")
    line = r.to_json()
    assert "\n" not in line
    back = TuningRecord.from_json(line)
    assert back.to_json() == line
    assert back.config == {"tile_0": [1, 2, 2, 2], "unroll": 512}  # tuples travel as lists
    assert (back.workload, back.target, back.device, back.config_index) == (r.workload, r.target, r.device, 100)
    assert back.tefuse_version == r.tefuse_version and back.tvm_version.startswith("0.27")
    assert back.timestamp == r.timestamp and back.error_msg == "line one\nline two"


def test_costs_median_mean_and_ok():
    r = _rec(costs=[1.0, 1.0, 100.0])
    assert r.ok and r.median_cost == 1.0 and r.mean_cost == 34.0
    for bad in (_rec(costs=[], error="compile_error", error_msg="nvcc: boom"), _rec(costs=[1e-6], error="timeout"),
                _rec(costs=[]), _rec(costs=[float("nan")])):
        assert not bad.ok and bad.median_cost == math.inf and bad.mean_cost == math.inf


def test_numpy_values_in_config_serialise():
    np = pytest.importorskip("numpy")
    r = _rec(config={"unroll": np.int64(16), "tile": (np.int32(2), 4)}, costs=[np.float64(1e-3)])
    assert json.loads(r.to_json())["config"] == {"unroll": 16, "tile": [2, 4]}


@pytest.mark.parametrize("line, why", [
    ("", "not JSON"),
    ('{"workload": "w", "target": "t"', "not JSON"),
    ("[1, 2]", "JSON object"),
    ('{"target": "t", "template": "x", "config": {}, "config_index": 0}', "workload"),
    ('{"workload": "w", "target": "t", "template": "x", "config": [], "config_index": 0}', "config"),
    ('{"workload": "w", "target": "t", "template": "x", "config": {}, "config_index": "3"}', "config_index"),
    ('{"workload": "w", "target": "t", "template": "x", "config": {}, "config_index": 0, "costs": ["a"]}', "costs"),
    ('{"workload": "w", "target": "t", "template": "x", "config": {}, "config_index": 0, "error": 5}', "error"),
])
def test_malformed_lines_raise_value_error(line, why):
    with pytest.raises(ValueError, match=why):
        TuningRecord.from_json(line)


def test_missing_optional_fields_default():
    r = TuningRecord.from_json('{"workload": "w", "target": "llvm", "template": "x", "config": {}, "config_index": 2}')
    assert r.device == "unknown" and r.costs == [] and not r.ok and r.error is None
