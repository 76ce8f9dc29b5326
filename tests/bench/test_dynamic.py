"""The dynamic-shape bench's cases, without a GPU: every timed size lies in its ranges, and the
inputs built for a size carry it on the axes the export names."""
from __future__ import annotations

import pytest

from tefuse.bench.dynamic import CASES, case_inputs
from tefuse.graph.dims import parse_range


@pytest.mark.parametrize("name", list(CASES))
def test_sizes_lie_in_the_ranges(name):
    case = CASES[name]
    ranges = {k: parse_range(v) for k, v in case.ranges.items()}
    for size in case.sizes:
        assert set(size) == set(ranges)
        for dim, v in size.items():
            assert ranges[dim].min <= v <= ranges[dim].max, (name, size)


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
