"""FusionPlan on a real GPU: one kernel, compiled once, executed with numpy and DLPack inputs."""
import numpy as np
import pytest

from tefuse.plan import FusionPlan, TensorDesc
from tests import reference as R

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-4), ("float16", 2e-2)])
def test_conv_bias_bn_relu_plan_on_gpu(dtype, tol, rng):
    plan = FusionPlan(TensorDesc((2, 32, 28, 28), dtype))
    hc = plan.add_conv(TensorDesc((48, 32, 3, 3), dtype), padding=1, stride=1)
    hb, hn = plan.add_bias(), plan.add_batch_norm()
    plan.add_activation("relu")
    plan.compile("cuda")
    assert plan.compiled.num_kernels == 1
    for _ in range(2):
        w = (rng.standard_normal((48, 32, 3, 3)) * 0.1).astype(dtype)
        b, g, be, m = (rng.standard_normal(48).astype(dtype) for _ in range(4))
        v = (rng.random(48) + 0.5).astype(dtype)
        args = plan.new_args()
        args.set_conv(hc, w)
        args.set_bias(hb, b)
        args.set_batch_norm(hn, g, be, m, v)
        x = rng.standard_normal((2, 32, 28, 28)).astype(dtype)
        ref = np.maximum(R.batch_norm(R.conv2d(x, w, padding=1) + b.astype(np.float64).reshape(1, -1, 1, 1),
                                      g, be, m, v), 0)
        out = plan.execute(x, args).astype(np.float64)
        err = np.abs(out - ref).max() / np.abs(ref).max()
        print(f"{dtype}: max rel err {err:.2e}")
        assert err < tol


def test_plan_takes_torch_cuda_tensors(rng):
    torch = pytest.importorskip("torch")
    plan = FusionPlan(TensorDesc((1, 16, 14, 14)))
    hc = plan.add_conv(TensorDesc((16, 16, 3, 3)), padding=1)
    he = plan.add_elementwise("add")
    plan.add_activation("relu")
    plan.compile("cuda")
    w = rng.standard_normal((16, 16, 3, 3)).astype("float32")
    r = rng.standard_normal((1, 16, 14, 14)).astype("float32")
    x = rng.standard_normal((1, 16, 14, 14)).astype("float32")
    args = plan.new_args()
    args.set_conv(hc, torch.from_numpy(w).cuda())
    args.set_elementwise(he, torch.from_numpy(r).cuda())
    out = plan.execute(torch.from_numpy(x).cuda(), args, as_numpy=False)
    got = torch.from_dlpack(out).cpu().numpy()
    np.testing.assert_allclose(got, np.maximum(R.conv2d(x, w, padding=1) + r, 0), rtol=1e-4, atol=1e-4)


def test_image_plan_pads_its_input_and_runs_on_wgmma(rng):
    """The stem's plan on Hopper: the input padded to 4 channels by one copy, the conv on wgmma
    reading the weight in its form (made from a torch CUDA tensor when set)."""
    torch = pytest.importorskip("torch")
    plan = FusionPlan(TensorDesc((2, 32, 32, 3), "float16", "NHWC"))
    hc = plan.add_conv(TensorDesc((7, 7, 3, 64), "float16"), stride=2, padding=3)
    hb = plan.add_bias()
    plan.add_activation("relu")
    plan.compile("cuda", precision="fp16")
    hopper = torch.cuda.get_device_capability() >= (9, 0)
    assert [k.template for k in plan.compiled.kernels] == (["cuda_injective", "wgmma_gemm"] if hopper else
                                                           [plan.compiled.kernels[0].template])
    x = rng.standard_normal((2, 32, 32, 3)).astype("float16")
    w = (rng.standard_normal((7, 7, 3, 64)) * 0.2).astype("float16")
    b = rng.standard_normal(64).astype("float16")
    args = plan.new_args()
    args.set_conv(hc, torch.from_numpy(w).cuda())
    args.set_bias(hb, b)
    ref = np.maximum(R.conv2d(x.astype(np.float64), w.astype(np.float64), strides=2, padding=3, layout="NHWC")
                     + b.astype(np.float64), 0)
    R.assert_close(plan.execute(x, args), ref, "float16")


def test_plan_bench_case_on_gpu():
    """The precision bench's `plan` case: fp16 NHWC plan, weights set at run time, checked and timed
    against cuDNN; on Hopper its weight is held OHWI for wgmma."""
    pytest.importorskip("torch")
    from tefuse.bench.precision import plan_case

    row = plan_case(64, 14, 64, 3, 1, 2, "fp16", "NHWC")
    assert row.ok and row.extra["kernels"] == 1, row.rel_err
    assert row.tefuse_ms > 0 and row.peer_ms > 0
