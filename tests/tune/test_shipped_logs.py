"""The shipped performance database (tefuse/tuning_logs/): well-formed, one best record per
workload, and applied when the chains it was tuned for are built (no GPU needed)."""
from __future__ import annotations

from pathlib import Path

import pytest

import tefuse
from tefuse.bench.tuning import CHAIN, RESNET50_SHAPES
from tefuse.plan.spec import parse_chain
from tefuse.tune.database import open_database

LOGS = Path(__file__).resolve().parents[2] / "tefuse" / "tuning_logs"
H100_LOG = LOGS / "cuda-sm_90.jsonl"


@pytest.mark.parametrize("log", sorted(LOGS.glob("*.jsonl")), ids=lambda p: p.name)
def test_shipped_logs_are_distilled_and_valid(log):
    db = open_database(log)
    recs = db.records()
    assert len(recs) >= 3
    keys = [(r.workload, r.target, r.device) for r in recs]
    assert len(keys) == len(set(keys)), "a distilled log holds one record per workload and device"
    for r in recs:
        assert r.error is None and r.costs and r.target == "cuda-sm_90", r.workload


def test_a_plan_compiles_with_the_shipped_record_of_its_kernel(tmp_path, monkeypatch):
    """FusionPlan.compile reads the performance database by default (MIOpen's perf-db): the
    fp16 NHWC plan of a ResNet-50 conv at batch 16 takes the shipped record tuned for it."""
    from tefuse.plan import FusionPlan, TensorDesc

    monkeypatch.setenv("TEFUSE_USER_DB", str(tmp_path / "user.jsonl"))
    monkeypatch.delenv("TEFUSE_SYSTEM_DB", raising=False)
    plan = FusionPlan(TensorDesc((16, 56, 56, 64), "float16", "NHWC"))
    plan.add_conv(TensorDesc((3, 3, 64, 64), "float16"), padding=1)
    plan.add_bias(), plan.add_batch_norm(), plan.add_activation("relu")
    (k,) = plan.compile("cuda:sm_90", precision="fp16").compiled.kernels
    best = open_database(LOGS / "cuda-sm_90-fp16.jsonl").best(k.workload, "cuda-sm_90")
    assert best is not None, f"no shipped record for {k.workload}"
    assert (k.config_source, k.template, k.config_index) == ("tuned", best.template, best.config_index)
    (fallback,) = plan.compile("cuda:sm_90", precision="fp16", db=None).compiled.kernels
    assert fallback.config_source == "fallback"


@pytest.mark.parametrize("shape", RESNET50_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_resnet50_chains_build_with_their_tuned_record(shape):
    db = open_database(H100_LOG)
    cg = tefuse.build(parse_chain(CHAIN.format(k=shape[1]), shape), "cuda", db=db)
    (k,) = cg.kernels
    best = db.best(k.workload, "cuda-sm_90")
    assert best is not None, f"no shipped record for {k.workload}"
    assert (k.config_source, k.template, k.config_index) == ("tuned", best.template, best.config_index)
    assert cg.source("cuda").count("__global__ void") >= 1


def _torchvision_at(name: str, batch: int, tmp_path):
    """torchvision's `name` (random weights) exported with a dynamic batch, imported at `batch`."""
    import torch

    from tefuse.bench.models import torch_model
    from tefuse.frontend.onnx.batch import import_onnx_profiles

    path = tmp_path / f"{name}.onnx"
    torch.onnx.export(torch_model(name), (torch.randn(1, 3, 224, 224),), str(path), dynamo=False,
                      input_names=["input"], output_names=["logits"], opset_version=17,
                      dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}})
    return import_onnx_profiles(str(path), [batch])[batch]


def _groups(graph, precision: str, **options):
    """The fused groups a CUDA sm_90 build of `graph` makes (nothing compiled)."""
    from tefuse.driver import prepare_graph
    from tefuse.fusion.fuse_ops import fuse_graph
    from tefuse.schedules import prologue_policy
    from tefuse.target import make_target

    target = make_target("cuda:sm_90")
    return fuse_graph(prepare_graph(graph, target, precision=precision, **options),
                      prologue=prologue_policy(target, True))


# kernels of quantized ResNet-50 at batch 256 whose config the shipped log holds (of 58): those
# tuned under structure keys; fp8's stem and its pooled codes have no record yet
# (the four projection shortcuts' convs store codes since their records were made: 4 fewer than
# the 42 and 41 the logs hold records of)
SHIPPED_COVERAGE = {"int8": 38, "fp8": 37}


@pytest.mark.parametrize("precision", sorted(SHIPPED_COVERAGE))
def test_quantized_resnet50_finds_its_shipped_records(precision, torch_installed, tmp_path):
    """The quantized logs are found by the kernels' structure keys (fusion.workload.structure_key),
    which hold every attribute of the fused ops: a graph pass that rewrites one (a per-tensor
    quantize's axis under NHWC did) makes the records unreachable, and the model builds from
    fallback configs with no error. The calibration's values are not part of a structure, only
    which products share a threshold (those reading one tensor), so any thresholds that keep that
    serve; the groups are fused as build fuses them, nothing compiled."""
    from tefuse.fusion.workload import structure_key
    from tefuse.graph.calibration import Calibration, products, projection_shortcuts

    graph = _torchvision_at("resnet50", 256, tmp_path)
    reads = [id(n.inputs[0]) for n in products(graph)]
    thresholds = {n.name: 1.0 + 0.01 * reads.index(id(n.inputs[0])) for n in products(graph)}
    # as a calibration makes them: the projection shortcuts' thresholds too (under their adds' names)
    calibration = Calibration("max", {**thresholds, **{add: 4.0 for add in projection_shortcuts(graph)}})
    groups = _groups(graph, precision, calibration=calibration)
    db = open_database(LOGS / f"cuda-sm_90-{precision}.jsonl")
    found = [g.name for g in groups if db.structure_records(structure_key(g), "cuda-sm_90")]
    assert len(groups) == 58
    assert len(found) >= SHIPPED_COVERAGE[precision], f"{len(found)} of 58 kernels find a shipped record"


# (model, batch): (kernels, kernels the shipped logs hold a record of) of an fp16 build; the
# ResNet-50 / MobileNet-V2 stems read their input padded to 4 channels since their records were
# made (graph/weights.py), the two kernels left out
SHIPPED_FP16 = {("resnet50", 32): (57, 55), ("mobilenet_v2", 32): (55, 53), ("vit_b_16", 32): (89, 89)}


@pytest.mark.parametrize("model,batch", sorted(SHIPPED_FP16))
def test_the_shipped_fp16_models_find_their_records(model, batch, torch_installed, tmp_path):
    """The shipped records are found by workload key: a pass that changes a kernel of the
    models it was tuned for shows here as kernels that no longer find theirs."""
    from tefuse.fusion.workload import structure_key, workload_key

    dbs = [open_database(log) for log in sorted(LOGS.glob("*.jsonl"))]  # as a build reads them all
    groups = _groups(_torchvision_at(model, batch, tmp_path), "fp16")
    found = [g.name for g in groups if any(db.best(workload_key(g), "cuda-sm_90") is not None
                                           or db.structure_records(structure_key(g), "cuda-sm_90") for db in dbs)]
    kernels, covered = SHIPPED_FP16[(model, batch)]
    assert len(groups) == kernels
    assert len(found) >= covered, f"{len(found)} of {kernels} kernels find a shipped record"
