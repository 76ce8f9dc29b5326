"""The precision bench's `zoo` suite on a GPU (tefuse/bench/precision.py, zoo_model_case): a
torchvision and a transformers model of the zoo (small configurations) built in fp16, checked
against onnxruntime and timed against PyTorch in the same process, one row each."""
import math

import pytest

from tefuse.bench.precision import zoo_model_case

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name", ["resnext50_32x4d", "bert"])
def test_a_zoo_model_is_checked_and_timed_against_pytorch(name, tmp_path):
    pytest.importorskip("torchvision")
    row = zoo_model_case(name, 2, "fp16", tmp_path, db=None, compile_peer=False, small=True)
    assert row.ok, (row.rel_err, row.extra.get("top1_agreement"))
    assert row.extra["kernels"] > 1 and "graph_error" not in row.extra
    assert 0 < row.tefuse_ms and 0 < row.peer_ms and math.isfinite(row.ratio)
    assert row.extra["slowest"] and row.extra["peer_profile"]
