"""The precision bench's bookkeeping (its timings need a GPU): ratios, geomeans, and a JSON
that holds every case measured so far."""
import contextlib
import json
import math
import shlex

import numpy as np
import pytest

import tefuse
from tefuse.bench.precision import Row, line, write_json
from tefuse.graph import GraphBuilder


def _row(case, t, peer, ok=True):
    return Row("conv", case, "fp16", 16, t, peer, "cuDNN", 1e-3, ok)


def test_json_holds_rows_and_geomeans_after_each_case(tmp_path):
    path = tmp_path / "out.json"
    rows = [_row("a", 2.0, 1.0)]
    write_json(rows, str(path))
    assert json.loads(path.read_text())["summary"]["conv/fp16/16"]["n"] == 1
    rows.append(_row("b", 0.5, 1.0, ok=False))
    summary = write_json(rows, str(path))
    data = json.loads(path.read_text())
    assert [r["ratio"] for r in data["rows"]] == [2.0, 0.5]
    assert math.isclose(summary["conv/fp16/16"]["geomean_ratio"], 1.0)
    assert data["summary"]["conv/fp16/16"]["all_ok"] is False


def test_line_says_failed_cases_and_mismatches():
    failed = Row("models", "vit", "fp16", 1, math.nan, None, "", math.inf, False, [], {"error": "boom"})
    assert line(failed).endswith("FAILED boom")
    assert "MISMATCH" in line(_row("a", 2.0, 1.0, ok=False)) and "2.00x" in line(_row("a", 2.0, 1.0))


def test_alternate_takes_each_sides_best_timing_in_turn(monkeypatch):
    """tefuse's and the peer's CUDA-graph timings are taken in turn and the best of each counts:
    a slow first timing of either side (a clock ramp) does not stand."""
    from tefuse.bench import precision

    calls = []
    times = {"run": iter([0.9, 0.5]), "peer": iter([4.0, 1.2, 1.0])}

    def fake_time_graph(fn):
        calls.append(fn.__name__)
        return next(times[fn.__name__])

    def run():
        pass

    def peer():
        pass

    monkeypatch.setattr(precision, "time_graph", fake_time_graph)
    assert precision.alternate(run, peer, 2.0) == (0.5, 1.0)
    assert calls == ["peer", "run", "peer", "run", "peer"]
    calls.clear()
    times["peer"] = iter([3.0, 2.0, 2.5])
    assert precision.alternate(None, peer, None) == (None, 2.0)  # no graph: the peer alone
    assert calls == ["peer"] * 3


def test_tuned_conv_cases_share_one_builder_and_runner(monkeypatch, tmp_path):
    """--tune starts the build workers and the measuring process once for the whole run (each
    start imports TVM's tensor intrinsics), hands the same ones to every case and closes them."""
    from tefuse.bench import precision

    class FakeTools:
        entered = exited = 0

        def __init__(self, tuner, only, untuned_only=False, parallel=None):
            self.tuner, self.only, self.untuned_only = tuner, only, untuned_only

        def __enter__(self):
            FakeTools.entered += 1
            return self

        def __exit__(self, *exc):
            FakeTools.exited += 1

    seen = []

    def fake_case(c, hw, k, r, s, batch, prec, db, layout, split_k, trials, tuning):
        seen.append((trials, tuning))
        return _row(f"{c}x{hw}", 1.0, 1.0)

    monkeypatch.setattr(precision, "TuningTools", FakeTools)
    monkeypatch.setattr(precision, "conv_case", fake_case)
    out = str(tmp_path / "o.json")
    assert precision.main(["conv", "--shapes", "0", "1", "--batch", "16", "--tune", "4", "--json", out,
                           "--tuner", "grid", "--only", "intrin=wgmma", "--only", "stages=2", "--untuned-only"]) == 0
    assert [t for t, _ in seen] == [4, 4] and seen[0][1] is seen[1][1] and isinstance(seen[0][1], FakeTools)
    assert (seen[0][1].tuner, seen[0][1].only, seen[0][1].untuned_only) == ("grid", {"intrin": "wgmma", "stages": 2},
                                                                          True)
    assert FakeTools.entered == FakeTools.exited == 1
    seen.clear()
    precision.main(["conv", "--shapes", "0", "--batch", "16", "--json", out])
    assert seen == [(0, None)] and FakeTools.entered == 1


def test_untuned_only_hands_the_shipped_records_to_the_tuning_loop(monkeypatch, tefuse_dirs, capsys):
    """--untuned-only: tune_first passes the records from elsewhere than the user database it
    tunes into (the shipped logs) as `covered`, so kernels with records are left out
    (tune/loop.py); without it, None. Without --tune it is refused."""
    from types import SimpleNamespace

    import tefuse.tune.loop as loop
    from tefuse.bench import precision
    from tefuse.tune.database import LayeredDatabase

    shipped = tefuse_dirs / "shipped.jsonl"
    shipped.write_text("")
    monkeypatch.setenv("TEFUSE_SYSTEM_DB", str(shipped))
    got = []
    monkeypatch.setattr(loop, "tune", lambda graph, target, trials, covered=None, **kw: got.append(covered))
    b = GraphBuilder()
    x = b.input("x", (1, 8, 8, 16), "float16")
    g = b.build(b.relu(b.conv2d(x, b.const(np.ones((3, 3, 16, 16), "float16")), padding=1, layout="NHWC")))
    for flag in (True, False):
        tools = SimpleNamespace(builder=None, runner=None, tuner="xgb", only={}, untuned_only=flag)
        precision.tune_first(g, "fp16", "default", 3, tools)
    assert isinstance(got[0], LayeredDatabase) and got[1] is None
    assert [d.path for d in got[0].layers] == [shipped]
    with pytest.raises(SystemExit):
        precision.main(["conv", "--untuned-only"])
    assert "--untuned-only goes with --tune" in capsys.readouterr().err


def test_attention_suite_runs_each_shape_with_the_tuning_asked(monkeypatch, tmp_path):
    """`attention --attention BxHxLxD...` runs attention_case per shape and precision, the batch
    in the row, --tune's trials and tools handed on."""
    from tefuse.bench import precision

    seen = []

    def fake_case(b, h, l, d, prec, db, trials, tuning):
        seen.append(((b, h, l, d), prec, trials, tuning is not None))
        return _row(f"{b}x{h}x{l}x{d}", 1.0, 2.0)

    monkeypatch.setattr(precision, "attention_case", fake_case)
    monkeypatch.setattr(precision, "TuningTools", lambda tuner, only, untuned_only, parallel: contextlib.nullcontext("tools"))
    out = tmp_path / "a.json"
    assert precision.main(["attention", "--attention", "32x12x197x64", "1x2x16x32", "--tune", "3",
                           "--json", str(out)]) == 0
    assert seen == [((32, 12, 197, 64), "fp16", 3, True), ((1, 2, 16, 32), "fp16", 3, True)]
    assert [r["case"] for r in json.loads(out.read_text())["rows"]] == ["32x12x197x64", "1x2x16x32"]


def test_zoo_suite_runs_the_untuned_list_by_default(monkeypatch, tmp_path):
    """`zoo` runs zoo_model_case per model and batch, by default over UNTUNED_ZOO: zoo models
    (every name the zoo knows), none of those the shipped tuning records were made for."""
    from tefuse.bench import precision, zoo

    seen = []

    def fake_case(name, b, prec, workdir, db, compile_peer, *_, **__):
        seen.append((name, b, prec, db, compile_peer))
        return _row(name, 1.0, 2.0)

    monkeypatch.setattr(precision, "zoo_model_case", fake_case)
    out = tmp_path / "z.json"
    assert precision.main(["zoo", "--batch", "1", "32", "--no-db", "--no-compile", "--json", str(out)]) == 0
    assert [s[:2] for s in seen] == [(n, b) for n in precision.UNTUNED_ZOO for b in (1, 32)]
    assert all(s[3] is None and s[4] is False for s in seen)
    assert len(precision.UNTUNED_ZOO) >= 15 and set(precision.UNTUNED_ZOO) <= set(zoo.names())
    assert not {"resnet50", "mobilenet_v2", "vit_b_16"} & set(precision.UNTUNED_ZOO)
    seen.clear()
    assert precision.main(["zoo", "--models", "bert", "--batch", "8"]) == 0
    assert [s[:3] for s in seen] == [("bert", 8, "fp16")]


def test_plan_suite_runs_resnet50s_shapes_in_the_layout_asked(monkeypatch):
    """`plan` runs plan_case (a FusionPlan, weights set at run time) per shape and batch, in the
    layout asked, as `conv` runs conv_case."""
    from tefuse.bench import precision

    seen = []

    def fake_case(c, hw, k, r, s, b, prec, layout, db, tune_trials, tuning):
        seen.append(((c, hw, k, r, s), b, prec, layout, db, tune_trials))
        return _row(f"{c}x{hw}", 1.0, 2.0)

    monkeypatch.setattr(precision, "plan_case", fake_case)
    assert precision.main(["plan", "--batch", "16", "--layout", "NHWC", "--shapes", "0", "14"]) == 0
    assert seen == [(precision.RESNET50_CONVS[0], 16, "fp16", "NHWC", "default", 0),
                    (precision.RESNET50_CONVS[14], 16, "fp16", "NHWC", "default", 0)]
    seen.clear()  # the plan's compile reads the performance database unless --no-db
    assert precision.main(["plan", "--batch", "16", "--shapes", "3", "--no-db"]) == 0
    assert seen == [(precision.RESNET50_CONVS[3], 16, "fp16", "NCHW", None, 0)]


def test_tuning_first_writes_to_the_database_the_build_reads():
    """--tune measures into the user database: with any other database the build would not see
    what was tuned, so it is refused before any measuring."""
    from tefuse.bench import precision

    with pytest.raises(ValueError, match="default database"):
        precision.tune_first(None, "fp16", None, 8)
    assert precision.tune_first(None, "fp16", None, 0) is None  # no trials: nothing to tune


def test_zoo_shards_split_the_list_and_merge_into_one_table(monkeypatch, tmp_path):
    """Shards K/N run every N-th model from the K-th; --merge writes one JSON with every row,
    the summary made over all of them and each shard's command."""
    from tefuse.bench import precision

    seen = []
    ratio = {"bert": 2.0, "gpt2": 0.5, "swin_t": 1.0}

    def fake_case(name, b, prec, workdir, db, compile_peer, *_, **__):
        seen.append(name)
        return _row(name, ratio[name], 1.0)

    monkeypatch.setattr(precision, "zoo_model_case", fake_case)
    shards = []
    for k in (1, 2):
        shards.append(tmp_path / f"s{k}.json")
        argv = ["zoo", "--models", "bert", "gpt2", "swin_t", "--batch", "1", "--shard", f"{k}/2",
                "--json", str(shards[-1])]
        assert precision.main(argv) == 0
    assert seen == ["bert", "swin_t", "gpt2"]
    out = tmp_path / "all.json"
    assert precision.main(["zoo", "--merge", *map(str, shards), "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert sorted(r["case"] for r in data["rows"]) == ["bert", "gpt2", "swin_t"]
    assert math.isclose(data["summary"]["conv/fp16/16"]["geomean_ratio"], 1.0)
    assert [c.split("--shard ")[1].split()[0] for c in data["commands"]] == ["1/2", "2/2"]


def test_a_bad_shard_is_one_usage_error(capsys):
    from tefuse.bench import precision

    with contextlib.suppress(SystemExit):
        precision.main(["zoo", "--shard", "3/2"])
    assert "--shard: want K/N with 1 <= K <= N, got '3/2'" in capsys.readouterr().err


def test_resume_keeps_measured_cases_and_runs_failed_and_missing_ones(monkeypatch, tmp_path):
    from tefuse.bench import precision

    out = tmp_path / "z.json"
    failed = Row("zoo", "gpt2", "fp16", 1, math.nan, None, "", math.inf, False, [], {"error": "boom"})
    write_json([Row("zoo", "bert", "fp16", 1, 2.0, 1.0, "torch", 1e-3, True), failed], str(out), ["first run"])
    seen = []

    def fake_case(name, b, prec, workdir, db, compile_peer, *_, **__):
        seen.append(name)
        return Row("zoo", name, prec, b, 1.0, 1.0, "torch", 1e-3, True)

    monkeypatch.setattr(precision, "zoo_model_case", fake_case)
    argv = ["zoo", "--models", "bert", "gpt2", "swin_t", "--batch", "1", "--resume", "--json", str(out)]
    assert precision.main(argv) == 0
    assert seen == ["gpt2", "swin_t"]
    rows = json.loads(out.read_text())["rows"]
    assert [(r["case"], r["ratio"]) for r in rows] == [("bert", 2.0), ("gpt2", 1.0), ("swin_t", 1.0)]
    assert json.loads(out.read_text())["commands"] == ["first run", shlex.join(["python", "-m", "tefuse.bench.precision",
                                                                               *argv])]


def test_a_budget_run_on_an_empty_log_has_no_model_time_before():
    """A fresh log holds no record: its model time before is unknown (None), not an infinity
    json.dump would write as the non-JSON `Infinity`."""
    from tefuse.bench.precision import budget_facts
    from tefuse.tune.budget import BudgetReport
    from tefuse.tune.scheduler import TaskStats

    report = BudgetReport(600.0, 590.0, 3.0, 4, "budget", [TaskStats("k", weight=2.0, best=1e-3)], [])
    facts = budget_facts(report)
    assert facts["tune_model_ms_before"] is None and math.isclose(facts["tune_model_ms_after"], 2.0)
    json.loads(json.dumps(facts, allow_nan=False))


@pytest.mark.parametrize("precision", ["int8", "fp8"])
def test_the_quantized_gemm_graph_computes_its_epilogue_on_the_exact_products(precision):
    """The gemm suite's int8 / fp8 case (a QDQ anchor with its dequantize, bias and ReLU) on
    llvm against numpy over the operands' values."""
    from tefuse.bench.precision import QUANT_GEMM_TOLERANCE, quant_gemm_graph

    graph, aq, _, av, wv, scale, bias = quant_gemm_graph(70, 48, 96, precision, np.random.default_rng(0))
    got = tefuse.build(graph, "llvm").run(a=aq)[0]
    want = np.maximum((av.astype(np.float64) @ wv.T.astype(np.float64)) * scale + bias, 0)
    assert np.linalg.norm(got - want) <= QUANT_GEMM_TOLERANCE * np.linalg.norm(want)


def test_the_gemm_suite_runs_quantized_precisions_as_quantized_products(monkeypatch, tmp_path):
    import tefuse.bench.precision as P

    seen = []
    monkeypatch.setattr(P, "quant_gemm_case", lambda m, n, k, prec, db=None, fast=False: seen.append(
        (m, n, k, prec, fast)) or P.Row("gemm", f"{m}x{n}x{k}", prec, m, 1.0, 1.0, "peer", 0.0, True, [], {}))
    monkeypatch.setattr(P, "gemm_case", lambda *a, **kw: pytest.fail("a quantized precision took the float case"))
    assert P.main(["gemm", "--precision", "int8", "fp8", "--gemm", "256x128x512", "--json", str(tmp_path / "g.json")]) == 0
    assert seen == [(256, 128, 512, "int8", False), (256, 128, 512, "fp8", False)]
    seen.clear()
    assert P.main(["gemm", "--precision", "int8", "fp8", "--gemm", "256x128x512", "--fp8-fast-accum",
                   "--json", str(tmp_path / "f.json")]) == 0
    assert seen == [(256, 128, 512, "int8", False), (256, 128, 512, "fp8", True)]  # fp8's alone


def test_the_fast_accumulation_gemm_marks_its_product_and_computes_the_same_numbers_on_llvm():
    """fast_accum changes how the tensor cores sum (ops/codes.fast_accumulation), not the op's value."""
    from tefuse.bench.precision import quant_gemm_graph

    g0, aq, *_ = quant_gemm_graph(70, 48, 96, "fp8", np.random.default_rng(0))
    g1, aq1, *_ = quant_gemm_graph(70, 48, 96, "fp8", np.random.default_rng(0), fast_accum=True)
    (p0,), (p1,) = ([n for n in g.nodes if n.op == "dense"] for g in (g0, g1))
    assert not p0.attrs.get("fast_accum") and p1.attrs["fast_accum"] is True
    np.testing.assert_array_equal(tefuse.build(g1, "llvm").run(a=aq1)[0], tefuse.build(g0, "llvm").run(a=aq)[0])


def test_a_quantized_model_is_judged_by_top1_agreement_a_float_one_by_its_error_too():
    from tefuse.bench.precision import model_ok

    assert model_ok("int8", 0.18, 1.0) and model_ok("fp8", 0.5, 0.99)
    assert not model_ok("int8", 0.01, 0.98)
    assert model_ok("fp16", 1e-3, 1.0)
    assert not model_ok("fp16", 2e-2, 1.0) and not model_ok("fp16", 1e-3, 31 / 32)
    assert model_ok("fp16", 1e-3, 31 / 32, 1.0) and not model_ok("fp16", 1e-3, 1.0, 31 / 32)
    assert not model_ok("int8", 0.01, 0.98, 1.0)  # a quantized build's ties count


def test_top1_excuses_a_near_tie_within_the_precision_tolerance_not_a_wrong_class():
    from tefuse.bench.precision import top1

    want = np.array([[10.0, 9.95, 0.0], [10.0, 9.0, 0.0], [1.0, 2.0, 3.0]])
    got = np.array([[9.9, 10.0, 0.0], [9.0, 10.0, 0.0], [1.0, 2.0, 3.0]])  # a tie broken, a miss, a match
    classes = top1(got, want, "fp16")  # fp16: 1e-2 of the logits' spread, 0.1 here
    assert (classes.agreement, classes.decided, classes.near_ties) == (1 / 3, 2 / 3, 1)
    assert top1(got, want, "fp32").near_ties == 0  # 1e-5: the same gap is a miss
    assert top1(got[:, None], want[:, None], "fp16") == classes  # leading axes are inputs
    assert top1(got + 1e3, want + 1e3, "fp16") == classes  # an offset softmax ignores changes nothing


@pytest.mark.parametrize("argv", [["conv", "--tune", "8", "--no-db"],
                                  ["models", "--tune", "8", "--prologue", "all"]])
def test_tuning_is_refused_where_the_builds_would_not_read_it(argv, capsys):
    from tefuse.bench import precision

    with pytest.raises(SystemExit) as e:
        precision.main(argv)
    assert e.value.code == 2 and "--tune" in capsys.readouterr().err


def test_zoo_tunes_each_model_and_batch_for_the_minutes_asked(monkeypatch):
    """--tune-minutes reaches every zoo case with the one set of tuning workers, the builds read
    the user database the tuning wrote; it goes with the zoo suite and a database only."""
    from tefuse.bench import precision

    seen, tools = [], []

    class FakeTools:
        def __init__(self, tuner, only, untuned_only=False, parallel=None):
            self.untuned_only, self.parallel = untuned_only, parallel
            tools.append(self)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

    def fake_case(name, b, prec, workdir, db, compile_peer, small, tune_minutes, tuning, fast=False, tune_trials=0,
                  siblings=False):
        seen.append((name, b, db, tune_minutes, tune_trials, tuning))
        return _row(name, 1.0, 2.0)

    monkeypatch.setattr(precision, "TuningTools", FakeTools)
    monkeypatch.setattr(precision, "zoo_model_case", fake_case)
    assert precision.main(["zoo", "--models", "bert", "gpt2", "--batch", "1", "32", "--tune-minutes", "10",
                           "--parallel", "4"]) == 0
    assert len(tools) == 1 and tools[0].parallel == 4
    assert seen == [(n, b, "default", 10.0, 0, tools[0]) for n in ("bert", "gpt2") for b in (1, 32)]
    seen.clear()  # or trials a kernel, where no record covers a kernel (a quantized model's records)
    assert precision.main(["zoo", "--models", "bert", "--batch", "32", "--tune", "8", "--untuned-only"]) == 0
    assert seen == [("bert", 32, "default", 0.0, 8, tools[1])] and tools[1].untuned_only
    for argv in (["conv", "--tune-minutes", "1"], ["zoo", "--tune-minutes", "1", "--no-db"],
                 ["zoo", "--tune-minutes", "1", "--tune", "8"], ["zoo", "--tune-minutes", "1", "--parallel", "0"]):
        with pytest.raises(SystemExit):
            precision.main(argv)


def test_the_models_suite_builds_fp8_with_fast_accumulation_when_asked(monkeypatch, tmp_path):
    import tefuse.bench.precision as P

    seen = []

    def fake_case(name, b, prec, workdir, db, compile_peer, pro, split, trials, tuning, fast=False):
        seen.append((prec, fast))
        return P.Row("models", name + (" fast_accum" if fast else ""), prec, b, 1.0, 1.0, "peer", 0.0, True, [], {})

    monkeypatch.setattr(P, "model_case", fake_case)
    out = tmp_path / "m.json"
    assert P.main(["models", "--models", "resnet50", "--precision", "fp8", "fp16", "--batch", "1",
                   "--fp8-fast-accum", "--no-compile", "--json", str(out)]) == 0
    assert seen == [("fp8", True), ("fp16", False)]
    assert [r["case"] for r in json.loads(out.read_text())["rows"]] == ["resnet50 fast_accum", "resnet50"]


def test_the_zoo_suite_runs_quantized_precisions_with_fast_accumulation_when_asked(monkeypatch, tmp_path):
    from tefuse.bench import precision

    seen = []

    def fake_case(name, b, prec, workdir, db, compile_peer, small, minutes, tuning, fast=False, tune_trials=0,
                  siblings=False):
        seen.append((name, prec, fast))
        return _row(name + (" fast_accum" if fast else ""), 1.0, 2.0)

    monkeypatch.setattr(precision, "zoo_model_case", fake_case)
    assert precision.main(["zoo", "--models", "bert", "--precision", "fp8", "int8", "--batch", "32",
                           "--fp8-fast-accum", "--json", str(tmp_path / "z.json")]) == 0
    assert seen == [("bert", "fp8", True), ("bert", "int8", False)]


def test_a_zoo_models_calibration_covers_its_products_from_seeded_inputs_of_its_kinds(tmp_path):
    """BERT (token ids, attention mask): the calibration, made at batch 1, names every Linear of
    the batch-2 export, and an int8 build of it on llvm stays within the int8 tolerance of
    onnxruntime."""
    pytest.importorskip("transformers")
    import onnx

    from tefuse.bench import zoo, zoo_builders
    from tefuse.bench.precision import TOLERANCE, zoo_calibration
    from tefuse.frontend.onnx import import_onnx
    from tefuse.frontend.reference import onnxruntime_outputs
    from tefuse.graph.calibration import products

    entry = zoo.entry("bert")
    cfg = entry.config(True)
    feeds = zoo.random_inputs(cfg, batch=2)
    path = zoo_builders.export_onnx(zoo.build_module(entry, True), feeds, cfg.outputs, tmp_path / "bert.onnx")
    cal = zoo_calibration("bert", True, tmp_path)
    graph = import_onnx(onnx.load(str(path)))
    assert set(cal.thresholds) == {n.name for n in products(graph)} and cal.thresholds
    got = tefuse.build(graph, "llvm", precision="int8", calibration=cal).run(**feeds)[0]
    want = onnxruntime_outputs(onnx.load(str(path)), feeds)[0].reshape(got.shape)
    assert np.abs(got - want).max() <= TOLERANCE["int8"] * np.abs(want).max()


def test_zoo_siblings_builds_with_siblings_merged_in_cases_of_their_own(monkeypatch, tmp_path):
    from tefuse.bench import precision

    seen = []

    def fake_case(name, b, prec, workdir, db, compile_peer, *_, siblings=False, **__):
        seen.append((name, siblings))
        return Row("zoo", precision.zoo_case(name, siblings=siblings), prec, b, 1.0, 1.0, "torch", 1e-3, True)

    monkeypatch.setattr(precision, "zoo_model_case", fake_case)
    out = tmp_path / "z.json"
    assert precision.main(["zoo", "--models", "bert", "--batch", "1", "--siblings", "--json", str(out)]) == 0
    assert precision.main(["zoo", "--models", "bert", "--batch", "1", "--json", str(out), "--resume"]) == 0
    assert seen == [("bert", True), ("bert", False)]  # the plain case is not the siblings' one
    assert [r["case"] for r in json.loads(out.read_text())["rows"]] == ["bert siblings", "bert"]


def test_the_summary_keeps_each_build_options_cases_apart():
    from tefuse.bench.precision import summarize, zoo_case

    rows = [{"suite": "zoo", "case": zoo_case("bert", fast, sib), "precision": prec, "batch": 1, "ratio": r, "ok": True}
            for prec, fast, sib, r in [("fp16", False, False, 2.0), ("fp16", False, True, 1.0),
                                       ("fp8", True, True, 0.5), ("fp8", True, False, 0.25), ("fp8", False, False, 4.0)]]
    summary = summarize(rows)
    assert {k: v["geomean_ratio"] for k, v in summary.items()} == {
        "zoo/fp16/1": 2.0, "zoo/fp16_siblings/1": 1.0, "zoo/fp8_fast_accum_siblings/1": 0.5,
        "zoo/fp8_fast_accum/1": 0.25, "zoo/fp8/1": 4.0}


def test_siblings_outside_the_zoo_suite_is_refused(capsys):
    from tefuse.bench import precision

    with pytest.raises(SystemExit):
        precision.main(["models", "--siblings"])
    assert "--siblings: the zoo suite only" in capsys.readouterr().err


def test_a_quantized_rows_calibration_reads_back_as_the_one_it_was_built_with():
    """A row keeps its calibration's thresholds (host-dependent floats the kernels' workload keys
    hold), so the row can be rebuilt, and its records matched, on another host."""
    from tefuse.bench.precision import calibration_record
    from tefuse.graph.calibration import Calibration

    cal = Calibration("entropy", {"conv2d.0": 2.3472645282745361, "conv2d.1": 0.1 + 0.2}).pin(["conv2d.1"])
    row_extra = json.loads(json.dumps({"calibration": calibration_record(cal)}))
    back = Calibration.from_json(json.dumps(row_extra["calibration"]))
    assert (back.method, back.thresholds, back.pinned, back.residuals) == \
        (cal.method, cal.thresholds, cal.pinned, cal.residuals)


def test_the_zoo_times_in_turn_with_the_runs_sharing_its_gpu_turn(monkeypatch, tmp_path):
    from tefuse.bench import precision, timing

    seen = []

    def fake_case(name, b, *args, **kwargs):
        seen.append(timing.GPU_TURN)
        return _row(name, 1.0, 2.0)

    monkeypatch.setattr(timing, "GPU_TURN", None)
    monkeypatch.setattr(precision, "zoo_model_case", fake_case)
    lock = str(tmp_path / "gpu.lock")
    assert precision.main(["zoo", "--models", "bert", "--batch", "1", "--gpu-turn", lock]) == 0
    assert seen == [lock]
    with pytest.raises(SystemExit):
        precision.main(["conv", "--gpu-turn", lock])
