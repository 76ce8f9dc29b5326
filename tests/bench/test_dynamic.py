"""The dynamic-shape bench's cases, without a GPU: every timed size lies in its ranges, and the
inputs built for a size carry it on the axes the export names."""
from __future__ import annotations

import numpy as np
import pytest

from tefuse.bench.dynamic import CASES, build_ratio, case_inputs, opt_size, timed_rounds
from tefuse.graph.dims import parse_range


@pytest.mark.parametrize("name", list(CASES))
def test_sizes_lie_in_the_ranges(name):
    case = CASES[name]
    ranges = {k: parse_range(v) for k, v in case.ranges.items()}
    for size in case.sizes:
        assert set(size) == set(ranges)
        for dim, v in size.items():
            assert ranges[dim].min <= v <= ranges[dim].max, (name, size)


@pytest.mark.parametrize("name", list(CASES))
def test_the_exact_build_compared_is_one_the_latencies_are_timed_on(name):
    """The first round of build seconds reuses a timed size's exact build: opt must be one."""
    assert opt_size(CASES[name]) in CASES[name].sizes


def test_the_build_ratio_is_of_the_medians():
    rounds = [{"dynamic": 18.0, "exact": 10.0}, {"dynamic": 14.0, "exact": 11.0}, {"dynamic": 13.0, "exact": 9.0}]
    assert build_ratio(rounds) == pytest.approx(14.0 / 10.0)


def test_later_rounds_alternate_which_build_goes_first():
    order = []
    builds = {"dynamic": lambda: order.append("dynamic"), "exact": lambda: order.append("exact")}
    rounds = timed_rounds(builds, {"dynamic": 2.0, "exact": 1.0}, 3)
    assert order == ["exact", "dynamic", "dynamic", "exact"]
    assert rounds[0] == {"dynamic": 2.0, "exact": 1.0} and len(rounds) == 3
    assert all(set(r) == {"dynamic", "exact"} and min(r.values()) >= 0 for r in rounds[1:])


def test_token_inputs_take_batch_and_sequence():
    feeds = case_inputs(CASES["bert"], {"N": 8, "S": 384})
    assert {k: v.shape for k, v in feeds.items()} == {"input_ids": (8, 384), "attention_mask": (8, 384)}
    assert feeds["attention_mask"][-1, -96:].sum() == 0 and feeds["attention_mask"][0].all()


def test_image_inputs_take_the_batch():
    feeds = case_inputs(CASES["resnet50"], {"N": 32})
    assert feeds["input"].shape == (32, 3, 224, 224)


def test_the_warm_up_loads_the_targets_intrinsics_before_any_build_is_timed(monkeypatch):
    import tefuse.schedules
    from tefuse.bench import dynamic

    seen = []
    monkeypatch.setattr(tefuse.schedules, "preload", seen.append)
    assert dynamic.warm_up("cuda:sm_90") >= 0 and seen == ["cuda"]


def test_slowest_kernels_name_what_a_run_at_a_size_launches():
    """On llvm: a dynamic-batch conv chain and its exact build each give their kernels' times at
    batch 2, slowest first, named by group, template and config."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from tefuse import build
    from tefuse.bench.dynamic import slowest_kernels
    from tefuse.frontend.onnx import import_onnx

    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((8, 4, 3, 3)).astype("float32"), "w")
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                           helper.make_node("Relu", ["c"], ["r"]),
                           helper.make_node("GlobalAveragePool", ["r"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8, 1, 1])], [w])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    feeds = {"x": np.random.default_rng(1).standard_normal((2, 4, 8, 8)).astype("float32")}
    dyn = build(import_onnx(model, dynamic=True), "llvm", dynamic={"N": "1:2:4"})
    exact = build(import_onnx(model, input_shapes={"x": (2, 4, 8, 8)}), "llvm")
    for cg in (dyn, exact):
        rows = slowest_kernels(cg, feeds, {"N": 2}, top=1)
        assert len(rows) == 1 and rows[0][0] in {k.group.name for k in cg.kernels} and rows[0][2] > 0
        every = slowest_kernels(cg, feeds, {"N": 2})
        assert len(every) == cg.num_kernels and [r[2] for r in every] == sorted((r[2] for r in every), reverse=True)


def test_a_model_that_fails_is_a_row_with_its_first_lines():
    from dataclasses import asdict

    from tefuse.bench.dynamic import failed_row
    from tefuse.errors import ModelImportError

    e = ModelImportError("'main_graph': 2 node(s) cannot be imported:\n  node 'a' (Shape): symbolic dims\n"
                         "  node 'b' (Shape): symbolic dims", [])
    row = asdict(failed_row(CASES["bert"], "fp16", e))
    assert row["error"] == "'main_graph': 2 node(s) cannot be imported: | node 'a' (Shape): symbolic dims"
    assert row["model"] == "bert" and row["sizes"] == [] and row["dynamic_kernels"] == 0


def test_transformers_bert_builds_once_over_batch_and_sequence(tmp_path):
    """transformers' BERT export computes its Reshape targets, position ids and attention mask
    from Shape(input_ids): with N and S symbolic that arithmetic folds at import
    (frontend/onnx/shape_values.py), one llvm build runs three sizes as onnxruntime does, with
    the kernels of one exact build."""
    import importlib.util
    import os

    missing = [m for m in ("torch", "transformers") if importlib.util.find_spec(m) is None]
    if missing:
        what = f"needs {', '.join(missing)} (pip install -e '.[zoo]')"
        if os.environ.get("TEFUSE_REQUIRE_TORCH"):
            pytest.fail(f"TEFUSE_REQUIRE_TORCH=1 but the test {what}", pytrace=False)
        pytest.skip(what)
    import onnx

    import tefuse
    from tefuse.bench.dynamic import export_dynamic
    from tefuse.frontend.onnx import import_onnx
    from tefuse.frontend.reference import onnxruntime_outputs

    case = CASES["bert"]
    model = onnx.load(str(export_dynamic(case, tmp_path, small=True)))
    cg = tefuse.build(import_onnx(model, dynamic=True), "llvm", dynamic={"N": "1:2:2", "S": "4:8:16"})
    for size in ({"N": 1, "S": 4}, {"N": 2, "S": 8}, {"N": 2, "S": 16}):
        feeds = case_inputs(case, size, small=True)
        got, want = cg.run(feeds)[0], onnxruntime_outputs(model, feeds)[0]
        assert got.shape == want.shape
        assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()
    feeds = case_inputs(case, {"N": 2, "S": 8}, small=True)
    exact = tefuse.build(import_onnx(model, input_shapes={k: v.shape for k, v in feeds.items()}), "llvm")
    assert cg.num_kernels == exact.num_kernels


def test_no_build_rounds_is_refused_before_anything_runs(capsys):
    from tefuse.bench import dynamic

    with pytest.raises(SystemExit) as e:
        dynamic.main(["--build-rounds", "0"])
    assert e.value.code == 2 and "--build-rounds must be 1 or more" in capsys.readouterr().err
