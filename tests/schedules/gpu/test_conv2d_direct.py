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

