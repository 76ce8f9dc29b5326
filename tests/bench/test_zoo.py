"""The model zoo on the CPU: every entry's small configuration exported from PyTorch, imported,
built for llvm and matched against onnxruntime (fp32: within 1e-4 of the output's scale, the same
argmax where one applies), one test per model.

A model tefuse cannot import yet fails with the refusal's one line (the node and its op type):
these are real gaps, never skipped. Each model is exported once per test session, into the
session's temporary directory.

Needs the `zoo` extra (torch, torchvision, transformers). Without it these tests skip; with
TEFUSE_REQUIRE_TORCH=1 (set by .ci/run once torch is installed) they fail, naming what to install.
"""
from __future__ import annotations

import importlib.util
import json
import math
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tefuse.bench import zoo

ZOO_EXTRA = ("torch", "torchvision", "transformers", "onnxruntime")
REQUIRED_FAMILIES = {
    "ResNet", "ResNeXt", "Wide ResNet", "RegNet", "EfficientNet", "EfficientNet v2", "MobileNet v2",
    "MobileNet v3", "ConvNeXt", "DenseNet", "Inception v3", "GoogLeNet", "ShuffleNet v2", "SqueezeNet", "MNASNet",
    "ViT", "Swin", "MaxViT", "FCN", "DeepLabV3", "LR-ASPP", "ResNet+FPN", "BERT", "RoBERTa", "DistilBERT", "GPT-2",
    "T5", "ViT (transformers)", "CLIP vision", "Whisper",
}


@pytest.fixture(scope="session")
def zoo_cache(tmp_path_factory):
    """The session's export directory, once the zoo extra is known to be installed."""
    missing = [m for m in ZOO_EXTRA if importlib.util.find_spec(m) is None]
    if missing:
        what = (f"the model zoo tests need {', '.join(missing)}: pip install -e '.[zoo]' (torch and "
                f"torchvision from PyTorch's CPU wheel index, as .ci/run does)")
        if os.environ.get("TEFUSE_REQUIRE_TORCH"):
            pytest.fail(f"TEFUSE_REQUIRE_TORCH=1 but {what}", pytrace=False)
        pytest.skip(what)
    return tmp_path_factory.mktemp("zoo")


@pytest.mark.parametrize("name", zoo.names())
def test_small_model_matches_onnxruntime_on_llvm(name, zoo_cache):
    r = zoo.check_entry(zoo.entry(name), target="llvm", precisions=("fp32",), small=True, cache_dir=zoo_cache,
                        jobs=1)
    if not r.ok:
        more = "".join(f"\n  {p}" for p in r.problems[1:])
        pytest.fail(zoo.result_line(r) + more, pytrace=False)
    (fp32,) = r.precisions
    assert fp32.kernels > 0 and fp32.err_over_scale <= 1e-4
    assert r.sensitivity >= zoo.MIN_SENSITIVITY
    if zoo.entry(name).argmax_axis is not None:
        assert fp32.argmax_agree == 1.0


def test_the_zoo_lists_every_required_family_once():
    assert len(zoo.ZOO) >= 25
    assert len(set(zoo.names())) == len(zoo.ZOO)
    assert REQUIRED_FAMILIES <= {e.family for e in zoo.ZOO}
    for e in zoo.ZOO:
        assert [i.name for i in e.full.inputs] == [i.name for i in e.small.inputs], e.name
        assert e.full.key() != e.small.key(), e.name
    with pytest.raises(KeyError, match="no zoo model 'resnet51'"):
        zoo.entry("resnet51")


def test_random_inputs_are_seeded_and_mask_the_last_row():
    cfg = zoo.entry("bert").small
    a, b = zoo.random_inputs(cfg), zoo.random_inputs(cfg)
    assert list(a) == ["input_ids", "attention_mask"]
    np.testing.assert_array_equal(a["input_ids"], b["input_ids"])
    assert a["input_ids"].dtype == np.int64 and 2 <= a["input_ids"].min() and a["input_ids"].max() < 256
    mask = a["attention_mask"]
    assert mask[0].all() and mask[-1, :12].all() and not mask[-1, 12:].any()
    assert zoo.random_inputs(cfg, batch=4)["input_ids"].shape == (4, 16)


def test_weights_are_seeded_and_nothing_is_left_constant(zoo_cache):
    import torch

    a, b = zoo.build_module(zoo.entry("convnext_tiny"), small=True), zoo.build_module(zoo.entry("convnext_tiny"),
                                                                                        small=True)
    for (name, p), q in zip(a.named_parameters(), b.parameters()):
        assert torch.equal(p, q), name
        assert p.numel() == 1 or not bool((p == p.reshape(-1)[0]).all()), f"{name} is constant"
    fresh = zoo.build_module(zoo.entry("resnet50"), small=True)
    bn = fresh.bn1
    assert not torch.allclose(bn.running_var, torch.ones_like(bn.running_var))  # measured, not the identity



def test_a_redrawn_t5_query_keeps_its_score_scale(zoo_cache):
    """T5 scales its attention scores in q's init, not in its forward: a redrawn q keeps the
    1/sqrt(d_head), so the scores' gain is about one (not sqrt(d_head)) as in a fresh T5."""
    m = zoo.build_module(zoo.entry("t5_encoder"), small=True)
    att = m.model.encoder.block[0].layer[0].SelfAttention
    fan_in, d_head = att.q.weight.shape[1], att.key_value_proj_dim
    assert d_head >= 4
    gain = lambda w: float(w.std()) * fan_in ** 0.5  # noqa: E731
    assert gain(att.q.weight) == pytest.approx(gain(att.k.weight) / d_head ** 0.5, rel=0.25)

def _relu_model(path):
    g = helper.make_graph([helper.make_node("Relu", ["input"], ["logits"], name="the_relu")], "tiny",
                          [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 32, 32])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 3, 32, 32])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


def test_a_refused_import_is_reported_with_the_node_and_its_reason(tmp_path, monkeypatch):
    from tefuse.frontend.onnx.registry import CONVERTERS

    monkeypatch.setattr(zoo, "export", lambda e, small, cache_dir=None: _relu_model(tmp_path / "m.onnx"))
    monkeypatch.delitem(CONVERTERS, "Relu")
    r = zoo.check_entry(zoo.entry("squeezenet1_1"), "llvm", ("fp32",), True, tmp_path)
    assert r.status == "import refused" and not r.ok and r.precisions == []
    assert r.reason == "node 'the_relu' (Relu, opset 17): no converter for op type 'Relu'"
    assert r.problems == [r.reason]
    assert "import refused: node 'the_relu'" in zoo.result_line(r)


def test_a_model_whose_output_ignores_its_input_is_a_weak_reference(tmp_path, monkeypatch):
    def constant_model(e, small, cache_dir=None):
        zero = helper.make_tensor("zero", TensorProto.FLOAT, [1], [0.0])
        nodes = [helper.make_node("Mul", ["input", "zero"], ["z"]), helper.make_node("Relu", ["z"], ["r"]),
                 helper.make_node("Add", ["r", "one"], ["logits"])]
        one = helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])
        g = helper.make_graph(nodes, "flat", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 32, 32])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 3, 32, 32])], [zero, one])
        path = tmp_path / "flat.onnx"
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
        return path

    monkeypatch.setattr(zoo, "export", constant_model)
    r = zoo.check_entry(zoo.entry("squeezenet1_1"), "llvm", ("fp32",), True, tmp_path, jobs=1)
    assert r.sensitivity == 0 and r.status == "weak reference" and not r.ok
    assert r.precisions[0].status == "ok"  # still built and compared: the numbers are recorded


def test_compare_counts_only_decisive_argmax_disagreements():
    want = np.array([[1.0, 0.99999, -1.0], [0.0, 2.0, 1.0]], np.float32)
    near_tie = np.array([[0.99999, 1.0, -1.0], [0.0, 2.0, 1.0]], np.float32)  # swaps a 1e-5 tie
    err, agree, ok = zoo.compare([near_tie], [want], "fp32", -1)
    assert agree == 0.5 and ok and err == pytest.approx(1e-5 / 2, rel=1e-2)
    wrong = np.array([[1.0, 0.99999, -1.0], [0.0, 1.0, 2.0]], np.float32)  # a 1.0 margin flipped
    assert zoo.compare([wrong], [want], "fp32", -1)[2] is False
    assert zoo.compare([want], [np.zeros_like(want)], "fp32", None)[0] == math.inf  # nothing to measure
    assert zoo.compare([np.full_like(want, np.nan)], [want], "fp32", None)[0] == math.inf


def test_the_command_line_writes_its_report_with_the_command(zoo_cache, tmp_path):
    out = tmp_path / "zoo.json"
    argv = ["--target", "llvm", "--small", "--models", "squeezenet1_1", "--out", str(out), "--cache-dir",
            str(zoo_cache), "--no-db", "-j", "1"]
    assert zoo.main(argv) == 0
    report = json.loads(out.read_text())
    assert report["command"].startswith("python -m tefuse.bench.zoo --target llvm --small --models squeezenet1_1")
    assert report["ok"] == report["models"] == 1 and report["versions"]["torch"]
    (row,) = report["results"]
    assert row["status"] == "ok" and row["config"] == "small" and row["precisions"][0]["kernels"] > 0


def test_the_command_line_refuses_unknown_models_and_precisions(capsys):
    with pytest.raises(SystemExit):
        zoo.main(["--models", "resnet51"])
    assert "unknown model 'resnet51'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        zoo.main(["--precision", "fp8"])
    assert "unknown precision 'fp8'" in capsys.readouterr().err


def test_shards_split_the_list_and_their_reports_merge(tmp_path, capsys):
    every = zoo.names()
    parts = [zoo.parse_args(["--shard", f"{k}/3"]).models for k in (1, 2, 3)]
    assert sorted(sum(parts, [])) == sorted(every) and all(parts)
    with pytest.raises(SystemExit):
        zoo.parse_args(["--shard", "4/3"])
    assert "--shard '4/3'" in capsys.readouterr().err

    def report(names, ok, **head):
        rows = [{"name": n, "ok": ok} for n in names]
        return {"command": f"zoo {names[0]}", "target": "cuda", "precisions": ["fp32"], "config": "full",
                "tolerance": {"fp32": 1e-4}, "versions": {}, "results": rows, **head}

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(report(parts[1], True)))
    b.write_text(json.dumps(report(parts[0], False)))
    out = tmp_path / "zoo.json"
    assert zoo.main(["--merge", str(a), str(b), "--out", str(out)]) == 1  # shard 1's models failed
    merged = json.loads(out.read_text())
    assert [r["name"] for r in merged["results"]] == [n for n in every if n in parts[0] + parts[1]]
    assert merged["ok"] == len(parts[1]) and merged["models"] == len(parts[0]) + len(parts[1])
    assert merged["commands"] == [f"zoo {parts[1][0]}", f"zoo {parts[0][0]}"]
    b.write_text(json.dumps(report(parts[0], True, target="llvm")))
    assert zoo.main(["--merge", str(a), str(b), "--out", str(out)]) == 2
