"""FusionPlan: add-time errors, compile once, execute many times with separate args."""
import numpy as np
import pytest

from tefuse.codegen.ptx import cuda_kernel_names
from tefuse.errors import PlanStateError, UnsupportedFusion
from tefuse.plan import FusionPlan, TensorDesc
from tests import reference as R


def _conv_bn_relu_plan(layout="NCHW"):
    shape = (1, 8, 10, 10) if layout == "NCHW" else (1, 10, 10, 8)
    wshape = (16, 8, 3, 3) if layout == "NCHW" else (3, 3, 8, 16)
    p = FusionPlan(TensorDesc(shape, layout=layout))
    hs = (p.add_conv(TensorDesc(wshape, layout="OIHW" if layout == "NCHW" else "HWIO"), padding=1),
          p.add_bias(), p.add_batch_norm(epsilon=1e-3), p.add_activation("leaky_relu", alpha=0.1))
    return p, hs


def _args(p, hs, rng, layout="NCHW"):
    hc, hb, hn, _ = hs
    a = p.new_args()
    w = rng.standard_normal(hc.arg_shapes[0]).astype("float32")
    b = rng.standard_normal(16).astype("float32")
    g, be, m = (rng.standard_normal(16).astype("float32") for _ in range(3))
    v = rng.random(16).astype("float32") + 0.5
    a.set_conv(hc, w)
    a.set_bias(hb, b)
    a.set_batch_norm(hn, g, be, m, v)

    def ref(x):
        axis = 1 if layout == "NCHW" else 3
        shape = [1, 1, 1, 1]
        shape[axis] = -1
        y = R.conv2d(x, w, padding=1, layout=layout) + b.reshape(shape)
        y = R.batch_norm(y, g, be, m, v, eps=1e-3, axis=axis)
        return np.where(y > 0, y, 0.1 * y)

    return a, ref


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_compile_once_execute_many(layout, rng):
    p, hs = _conv_bn_relu_plan(layout)
    p.compile("llvm")
    assert p.compiled.num_kernels == 1
    for _ in range(2):  # new args and inputs, same compiled kernel
        a, ref = _args(p, hs, rng, layout)
        x = rng.standard_normal(p.input.shape).astype("float32")
        np.testing.assert_allclose(p.execute(x, a), ref(x), rtol=1e-4, atol=1e-4)


def test_plan_is_one_cuda_kernel():
    p, _ = _conv_bn_relu_plan()
    p.compile("cuda")
    assert len(cuda_kernel_names(p.source("cuda"))) == 1


def test_a_small_grid_fp16_conv_plan_stays_one_cuda_kernel():
    """ResNet-50's 512-channel 3x3 conv at batch 1 in fp16: a build would split it (graph/split_k.py);
    a plan is one kernel, as MIOpen's is."""
    p = FusionPlan(TensorDesc((1, 7, 7, 512), dtype="float16", layout="NHWC"))
    p.add_conv(TensorDesc((3, 3, 512, 512), dtype="float16", layout="HWIO"), padding=1)
    p.add_activation("relu")
    p.compile("cuda")
    assert p.compiled.num_kernels == 1 and len(cuda_kernel_names(p.source("cuda"))) == 1
    assert not any(n.attrs.get("split_k") for n in p.compiled.graph.nodes)


def test_residual_add(rng):
    p = FusionPlan(TensorDesc((1, 4, 6, 6)))
    hc = p.add_conv(TensorDesc((4, 4, 1, 1)))
    he = p.add_elementwise("add")
    p.add_activation("relu")
    p.compile("llvm")
    a = p.new_args()
    w = rng.standard_normal((4, 4, 1, 1)).astype("float32")
    r = rng.standard_normal((1, 4, 6, 6)).astype("float32")
    a.set_conv(hc, w)
    a.set_elementwise(he, r)
    x = rng.standard_normal((1, 4, 6, 6)).astype("float32")
    np.testing.assert_allclose(p.execute(x, a), np.maximum(R.conv2d(x, w) + r, 0), rtol=1e-4, atol=1e-5)


def test_errors_at_add_time():
    p = FusionPlan(TensorDesc((1, 8, 10, 10)))
    with pytest.raises(UnsupportedFusion, match=r"step 0 \(bias\)"):
        p.add_bias()
    with pytest.raises(UnsupportedFusion, match="unknown activation 'swishy'"):
        p.add_activation("swishy")
    with pytest.raises(UnsupportedFusion, match="step 0 \\(conv2d\\).*input channels"):
        p.add_conv(TensorDesc((16, 4, 3, 3)))  # 4 != 8 input channels
    p.add_conv(TensorDesc((16, 8, 3, 3)))  # the refused steps left no trace
    with pytest.raises(UnsupportedFusion, match="one convolution"):
        p.add_conv(TensorDesc((16, 16, 3, 3)))
    with pytest.raises(UnsupportedFusion, match="do not broadcast"):
        p.add_elementwise("add", TensorDesc((1, 3, 8, 8)))


def test_nchw_weight_on_nhwc_plan():
    p = FusionPlan(TensorDesc((1, 10, 10, 8), layout="NHWC"))
    with pytest.raises(UnsupportedFusion, match="weight layout OIHW does not match the NHWC plan"):
        p.add_conv(TensorDesc((16, 8, 3, 3), layout="OIHW"))
    with pytest.raises(UnsupportedFusion, match="read as HWIO"):
        p.add_conv(TensorDesc((16, 8, 3, 3)))  # shape of an OIHW weight, no layout given


def test_state_errors(rng):
    p, hs = _conv_bn_relu_plan()
    x = rng.standard_normal((1, 8, 10, 10)).astype("float32")
    with pytest.raises(PlanStateError, match="not compiled"):
        p.execute(x, p.new_args())
    p.compile("llvm")
    with pytest.raises(PlanStateError, match="not set: s0_weight"):
        p.execute(x, p.new_args())
    a, _ = _args(p, hs, rng)
    with pytest.raises(PlanStateError, match="must have shape"):
        a.set_bias(hs[1], np.zeros(3, "float32"))
    with pytest.raises(PlanStateError, match="is a bias, not a conv2d"):
        a.set_conv(hs[1], np.zeros(16, "float32"))
    p.add_activation("tanh")
    with pytest.raises(PlanStateError, match="changed after compile"):
        p.execute(x, a)
