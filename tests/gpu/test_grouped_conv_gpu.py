"""ResNeXt's grouped 3x3 convs, made dense on the tensor cores (graph/grouped.py), on a real CUDA
GPU in fp16 vs the float64 numpy reference: the four stages of ResNeXt-50 32x4d (4 to 32
channels a group) with bias and ReLU, a 32x8d stage, and a FusionPlan whose run-time grouped
weight is expanded when set.

Deselected by default; run with
    python -m pytest -m gpu tests/gpu/test_grouped_conv_gpu.py -q -s
"""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse.plan import FusionPlan, TensorDesc
from tests.reference import assert_close, conv2d

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("c,hw,groups,stride", [
    (128, 56, 32, 1), (256, 28, 32, 1), (512, 14, 32, 1), (1024, 7, 32, 1),
    (256, 56, 32, 2),  # a stage's first block: stride 2
    (512, 28, 32, 1),  # 32x8d: 16 channels a group
])
def test_grouped_conv_bias_relu_fp16(rng, c, hw, groups, stride):
    n = 4
    b = tefuse.GraphBuilder()
    x = b.input("x", (n, c, hw, hw))
    wv = (rng.standard_normal((c, c // groups, 3, 3)) / np.sqrt(9 * c // groups)).astype("float32")
    bv = rng.standard_normal(c).astype("float32")
    y = b.conv2d(x, b.const(wv, name="w"), strides=stride, padding=1, groups=groups)
    g = b.build(b.relu(b.bias_add(y, b.const(bv, name="bias"), axis=1)))
    cg = tefuse.build(g, "cuda", precision="fp16")
    (conv,) = [k for k in cg.kernels if "conv2d" in k.group.name]
    assert conv.group.anchor.attrs["groups"] == 1, cg.summary()
    xv = rng.standard_normal(x.shape).astype("float32")
    (got,) = cg.run(x=xv)
    # the reference from the fp16-rounded operands the build multiplies
    x16, w16 = (v.astype(np.float16).astype(np.float64) for v in (xv, wv))
    ref = np.maximum(conv2d(x16, w16, strides=stride, padding=1, groups=groups)
                     + bv.astype(np.float16).reshape(1, -1, 1, 1), 0)
    err = assert_close(got, ref, "float32", rtol=1e-2, atol=2e-2, what=f"c={c} hw={hw} stride={stride}")
    print(f"\nc={c} hw={hw} groups={groups} stride={stride} [{conv.template}]: max abs err {err:.3g}")


def test_grouped_plan_fp16(rng):
    """ResNeXt-50's last grouped conv as a plan: the user's grouped HWIO weight, made dense."""
    p = FusionPlan(TensorDesc((8, 7, 7, 1024), dtype="float16", layout="NHWC"))
    h = p.add_conv(TensorDesc((3, 3, 32, 1024), dtype="float16"), padding=1, groups=32)
    p.add_activation("relu")
    p.compile("cuda")
    assert p.compiled.graph.node("s0_conv2d").attrs["groups"] == 1, p.compiled.summary()
    x = rng.standard_normal((8, 7, 7, 1024)).astype("float16")
    w = (rng.standard_normal((3, 3, 32, 1024)) / 17).astype("float16")
    a = p.new_args()
    a.set_conv(h, w)
    ref = np.maximum(conv2d(x.astype(np.float64), w.astype(np.float64), padding=1, layout="NHWC", groups=32), 0)
    err = assert_close(p.execute(x, a), ref, "float16", rtol=1e-2, atol=2e-2, what="grouped plan")
    print(f"\ngrouped plan [{p.compiled.kernels[0].template}]: max abs err {err:.3g}")
