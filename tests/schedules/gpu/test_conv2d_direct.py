"""The CUDA direct conv template (schedules/gpu/conv2d_direct.py) without a GPU: its space
admits only blocks within the device's threads (and, with one group, shared memory: its estimate
is what TVM allocates), so no tuning trial is spent on a config the build would refuse."""
from __future__ import annotations

import random

import numpy as np
import pytest

from tefuse import GraphBuilder
from tefuse.codegen.compile import KernelSpec, schedule_kernel
from tefuse.codegen.lower import lower_group
from tefuse.fusion import fuse_graph
from tefuse.schedules.common import alloc_bytes, block_threads
from tefuse.schedules.gpu.conv2d_direct import Conv2dDirect, shared_bytes, threads
from tefuse.target import make_target


def _info(shape, k, kernel, groups=1, stride=1, layout="NCHW"):
    rng = np.random.default_rng(0)
    c = shape[1] if layout == "NCHW" else shape[3]
    b = GraphBuilder()
    w = rng.standard_normal((k, c // groups, kernel, kernel)).astype("float32")
    y = b.conv2d(b.input("x", shape), b.const(w), strides=stride, padding=kernel // 2, groups=groups)
    (grp,) = fuse_graph(b.build(b.relu(y)))
    return grp, lower_group(grp)


CASES = {
    "stem_7x7_s2": ((1, 3, 56, 56), 64, 7, 1, 2),
    "3x3": ((2, 32, 14, 14), 64, 3, 1, 1),
    "grouped_3x3": ((2, 64, 14, 14), 64, 3, 8, 1),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_space_admits_only_blocks_within_the_limits(case):
    shape, k, kernel, groups, stride = CASES[case]
    grp, low = _info(shape, k, kernel, groups, stride)
    cuda = make_target("cuda")
    t = Conv2dDirect()
    space = t.space(low.info, cuda)
    rng = random.Random(0)
    sample = rng.sample(range(len(space)), 400)
    admitted = [i for i in sample if space.admits(i)]
    assert 0 < len(admitted) < len(sample)  # the product of the splits holds blocks past the limits
    assert space.admits(t.fallback(low.info, cuda, space).index)
    for i in admitted[:6] + [i for i in sample if not space.admits(i)][:3]:
        v = space.get(i).values
        mod = schedule_kernel(KernelSpec(grp.name, low.func, low.info, t, space.get(i)), cuda) \
            if space.admits(i) else None
        if mod is None:  # refused: over the threads or the shared memory the estimate says
            assert threads(v) > 1024 or (groups == 1 and shared_bytes(low.info, v) > 49152)
            continue
        assert block_threads(mod.script()) == threads(v)
        if groups == 1:
            assert alloc_bytes(mod)["shared"] == shared_bytes(low.info, v), v


RESNEXT = {  # ResNeXt-50 32x4d's grouped 3x3 convs at batch 32, NHWC fp16 (and a ResNet stem, NCHW)
    "stage1": ((32, 56, 56, 128), 128, 3, 32, 1, "NHWC", "float16"),
    "stage4": ((32, 7, 7, 1024), 1024, 3, 32, 1, "NHWC", "float16"),
    "stage4_b1": ((1, 7, 7, 1024), 1024, 3, 32, 1, "NHWC", "float16"),
    "stem_nchw": ((1, 3, 224, 224), 64, 7, 1, 2, "NCHW", "float32"),
}


@pytest.mark.parametrize("case", list(RESNEXT))
def test_the_fallback_fills_blocks_and_stays_in_a_group(case):
    shape, k, kernel, groups, stride, layout, dtype = RESNEXT[case]
    b = GraphBuilder()
    c = shape[3] if layout == "NHWC" else shape[1]
    wshape = (kernel, kernel, c // groups, k) if layout == "NHWC" else (k, c // groups, kernel, kernel)
    w = np.random.default_rng(0).standard_normal(wshape).astype(dtype)
    y = b.conv2d(b.input("x", shape, dtype), b.const(w), strides=stride, padding=kernel // 2, groups=groups,
                 layout=layout)
    (grp,) = fuse_graph(b.build(b.relu(y)))
    low = lower_group(grp)
    cuda = make_target("cuda")
    t = Conv2dDirect()
    space = t.space(low.info, cuda)
    cfg = t.fallback(low.info, cuda, space)
    v = cfg.values
    assert space.admits(cfg.index)
    n_threads = threads(v)
    assert 64 <= n_threads <= 1024, v  # not the 8-thread blocks a 7-wide map gave
    k_axis = 2 if layout == "NHWC" else 0
    block_k = v[f"tile_{k_axis}"][2] * v[f"tile_{k_axis}"][3]
    assert (k // groups) % block_k == 0, v  # a block's filters inside one group
    mod = schedule_kernel(KernelSpec(grp.name, low.func, low.info, t, cfg), cuda)  # within the limits
    assert block_threads(mod.script()) == n_threads
