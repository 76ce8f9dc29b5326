"""FKL's example harness (bench/fkl.py): what can be checked without a GPU or an FKL checkout."""
from __future__ import annotations

import re

import pytest

from tefuse.bench import fkl, preprocess


def test_the_harness_crops_the_rectangles_the_bench_checks_against():
    src = fkl.SOURCE.read_text()
    for block in re.findall(r"\{\{(.*?)\}\}", src) + re.findall(r"crops\{(.*?)\};", src, re.S):
        nums = [int(v) for v in re.findall(r"-?\d+", block)]
        assert [tuple(nums[i:i + 4]) for i in range(0, len(nums), 4)] == list(preprocess.RGB_RECTS)


def test_a_folder_without_fkls_headers_is_one_clear_error(tmp_path):
    with pytest.raises(fkl.FklError, match="not a Fused Kernel Library checkout"):
        fkl.build(tmp_path, "sm_90", tmp_path / "build")


def test_a_missing_nvcc_is_one_clear_error(tmp_path):
    (tmp_path / "include" / "fused_kernel").mkdir(parents=True)
    (tmp_path / "include" / "fused_kernel" / "fused_kernel.h").write_text("")
    with pytest.raises(fkl.FklError, match="not found"):
        fkl.build(tmp_path, "sm_90", tmp_path / "build", nvcc="no-such-nvcc")
