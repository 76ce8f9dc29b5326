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
