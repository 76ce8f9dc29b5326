"""The chain bench refuses image pre-processing steps (which it has no PyTorch peer for) in one
line naming them and the bench that takes them, before building anything."""
from __future__ import annotations

import pytest

from tefuse.bench.chain import bench_chain
from tefuse.errors import TefuseError


def test_image_steps_are_refused_with_the_bench_that_takes_them():
    with pytest.raises(TefuseError, match=r"color_convert, crop_resize have no PyTorch peer.*tefuse\.bench\.preprocess"):
        bench_chain("crop_resize(n=2,h=8,w=8)+rgb2bgr", (1, 16, 16, 3), dtype="uint8", layout="NHWC", target="llvm")
