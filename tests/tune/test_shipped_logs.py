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


def test_shipped_logs_are_distilled_and_valid():
    db = open_database(H100_LOG)
    recs = db.records()
    assert len(recs) >= 3
    keys = [(r.workload, r.target, r.device) for r in recs]
    assert len(keys) == len(set(keys)), "a distilled log holds one record per workload and device"
    for r in recs:
        assert r.error is None and r.costs and r.target == "cuda-sm_90", r.workload


@pytest.mark.parametrize("shape", RESNET50_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_resnet50_chains_build_with_their_tuned_record(shape):
    db = open_database(H100_LOG)
    cg = tefuse.build(parse_chain(CHAIN.format(k=shape[1]), shape), "cuda", db=db)
    (k,) = cg.kernels
    best = db.best(k.workload, "cuda-sm_90")
    assert best is not None, f"no shipped record for {k.workload}"
    assert (k.config_source, k.template, k.config_index) == ("tuned", best.template, best.config_index)
    assert cg.source("cuda").count("__global__ void") >= 1
