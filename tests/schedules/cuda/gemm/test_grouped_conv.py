"""ResNeXt's grouped 3x3 conv on the tensor-core templates, without a GPU: made dense at build time
(graph/grouped.py), untuned it is scheduled by wgmma_gemm on Hopper and tensorcore_gemm on
Ampere, and nvcc's PTX holds their instructions. Slow (two fp16 CUDA builds and nvcc)."""
from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

import tefuse
from tefuse.codegen.ptx import compile_to_ptx
from tefuse.graph import GraphBuilder

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")]


def resnext_last_stage_conv():
    """ResNeXt-50 32x4d's last grouped conv at batch 32: 1024 -> 1024 channels in 32 groups, 7x7."""
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x = b.input("x", (32, 1024, 7, 7))
    w = b.const((rng.standard_normal((1024, 32, 3, 3)) / 17).astype("float32"))
    return b.build(b.relu(b.conv2d(x, w, padding=1, groups=32)))


@pytest.mark.parametrize("target,template,arch,instruction", [
    ("cuda:sm_90", "wgmma_gemm", "sm_90a", r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k16\.f32\.f16\.f16"),
    ("cuda:sm_80", "tensorcore_gemm", "sm_80", r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.f16\.f16\.f32"),
])
def test_resnext_grouped_conv_runs_on_the_tensor_cores(target, template, arch, instruction):
    cg = tefuse.build(resnext_last_stage_conv(), target, precision="fp16", cache=None)
    (conv,) = [k for k in cg.kernels if "conv2d" in k.group.name]
    assert conv.group.anchor.attrs["groups"] == 1
    assert conv.template == template, cg.summary()
    assert re.search(instruction, compile_to_ptx(conv.source("cuda"), arch))
