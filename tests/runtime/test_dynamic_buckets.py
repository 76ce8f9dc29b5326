"""Size buckets on llvm: a dynamic CNN whose kernels get a variant for one bucket (the CPU template
made to vary with size, and a tuning record at that bucket's size, looked up under the group's
workload at fixed sizes) runs each size on its bucket's kernels and matches onnxruntime in every
bucket, saved and loaded too; a size out of range stays one line."""
from types import SimpleNamespace

import numpy as np
import onnxruntime as ort
import pytest

import tefuse
from tefuse.errors import DynamicShapeError
from tefuse.frontend.onnx import import_onnx
from tefuse.runtime.artifact import load, save
from tefuse.schedules.cpu.generic import CpuGeneric
from tests.frontend.dynamic_models import cnn

RANGE, ENDS = "1:4:8", [2, 4, 8]  # buckets 1-2, 3-4 (opt), 5-8
TUNED = {"parallel_loops": 1, "unroll": 16, "unroll_explicit": 0}  # not the fallback's (index 0)


class RecordsAtEight:
    """Records only for workloads at N=8 (the shape in a key's second field starts with 8):
    the last bucket's representative size; every key asked for is kept."""

    def __init__(self):
        self.asked = []

    def best(self, workload, target):
        self.asked.append(workload)
        shape = workload.split("|")[1]
        return SimpleNamespace(template="cpu_generic", config=TUNED) if shape.startswith("8x") else None


@pytest.fixture(scope="module")
def bucketed():
    db = RecordsAtEight()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(CpuGeneric, "size_buckets", True)
        cg = tefuse.build(import_onnx(cnn("N"), dynamic=True), "llvm", dynamic={"N": RANGE},
                          buckets={"N": ENDS}, db=db)
    return cg, db


def _feeds(n, seed=0):
    return {"x": np.random.default_rng(seed).standard_normal((n, 3, 8, 8)).astype("float32")}


def _check(cg, n):
    sess = ort.InferenceSession(cnn("N").SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = _feeds(n, n)
    (got,), (want,) = cg.run(**feeds), sess.run(None, feeds)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_variants_only_where_the_buckets_config_differs(bucketed):
    cg, db = bucketed
    assert [str(b) for b in cg.buckets.buckets[0]] == ["1-2", "3-4", "5-8"]
    # the bucket 5-8 read records under the workloads at N=8; 1-2 (below opt: scheduled for its
    # smallest size) found none at N=1 and took the kernels' own fallback config, so it shares
    # their modules and has no variant
    assert any(k.split("|")[1].startswith("8x") for k in db.asked)
    assert any(k.split("|")[1].startswith("1x") for k in db.asked)
    assert cg.variants and all(set(v) == {(2,)} for v in cg.variants.values())
    for i, v in cg.variants.items():
        assert v[(2,)].config_source == "tuned" and cg.kernels[i].config_source == "fallback"
        assert v[(2,)].params == cg.kernels[i].params
    assert cg.num_variants == len({id(v[(2,)].module) for v in cg.variants.values()})
    exact = tefuse.build(import_onnx(cnn(4)), "llvm")
    assert cg.num_kernels == exact.num_kernels  # a run launches as many kernels


def test_each_size_runs_its_buckets_kernels_and_matches_onnxruntime(bucketed):
    cg, _ = bucketed
    for n in (1, 2, 3, 4):
        assert all(a is b for a, b in zip(cg.kernels_for({"N": n}), cg.kernels, strict=True))
    for n in (5, 8):
        run = cg.kernels_for({"N": n})
        assert [i for i, (a, b) in enumerate(zip(run, cg.kernels)) if a is not b] == sorted(cg.variants)
    for n in (1, 3, 6, 8, 2):  # every bucket, and back
        _check(cg, n)


def test_saved_variants_load_and_run_in_each_bucket(bucketed, tmp_path):
    cg, _ = bucketed
    save(cg, tmp_path / "cnn.tefuse")
    loaded = load(tmp_path / "cnn.tefuse")
    assert loaded.buckets == cg.buckets
    assert {i: set(v) for i, v in loaded.variants.items()} == {i: set(v) for i, v in cg.variants.items()}
    assert loaded.num_variants == cg.num_variants
    for i, v in loaded.variants.items():
        assert v[(2,)].config_index == cg.variants[i][(2,)].config_index != loaded.kernels[i].config_index
    for n in (2, 7):
        _check(loaded, n)
    with pytest.raises(DynamicShapeError) as e:
        loaded.run(**_feeds(9))
    assert "\n" not in str(e.value) and "'N'" in str(e.value) and RANGE in str(e.value)


def test_bucket_ends_outside_the_range_are_one_line():
    with pytest.raises(DynamicShapeError) as e:
        tefuse.build(import_onnx(cnn("N"), dynamic=True), "llvm", dynamic={"N": RANGE}, buckets={"N": [2, 16]})
    assert "\n" not in str(e.value) and "16" in str(e.value) and RANGE in str(e.value)
