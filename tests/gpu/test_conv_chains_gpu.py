"""Conv chains on a real CUDA GPU vs the float64 numpy reference, with numpy inputs and with
DLPack tensors (torch.cuda when torch is importable).

Deselected by default (`addopts` has `-m 'not gpu ...'`); run with
    python -m pytest -m gpu tests/gpu -q -s
Skips cleanly when `tefuse.target.has_gpu()` is false.
"""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tests.codegen.test_cuda_codegen import conv_chain
from tests.fusion.test_fuse_ops import adam_graph, adam_inputs, adam_reference
from tests.reference import assert_close, batch_norm, conv2d

pytestmark = pytest.mark.gpu

CHAINS = [
    pytest.param(dict(kind="bn"), id="conv_bias_bn_relu"),
    pytest.param(dict(kind="residual"), id="conv_bias_add_relu"),
    pytest.param(dict(kind="bn", layout="NHWC"), id="nhwc_bn"),
    pytest.param(dict(kind="residual", layout="NHWC"), id="nhwc_residual"),
    pytest.param(dict(kind="bn", groups=64), id="depthwise_bn"),
    pytest.param(dict(kind="residual", layout="NHWC", groups=64), id="depthwise_nhwc_residual"),
    pytest.param(dict(kind="bn", dtype="float16"), id="fp16_bn"),
    pytest.param(dict(kind="residual", dtype="float16"), id="fp16_residual"),
    pytest.param(dict(kind="bn", dtype="float16", layout="NHWC"), id="fp16_nhwc_bn"),
    pytest.param(dict(kind="bn", dtype="float16", groups=64), id="fp16_depthwise_bn"),
    pytest.param(dict(kind="bn", n=2, c=32, k=48, hw=17), id="odd_sizes_bn"),
    pytest.param(dict(kind="residual", layout="NHWC", n=2, c=24, k=40, hw=15, groups=8), id="grouped_odd_nhwc"),
    # 3x3 over 24 / 40 channels: K = 216 / 360, not whole 64-deep steps, so the A tile's copy
    # nests pad_einsum's K guard around the conv's padding (schedules/cuda/passes/chunk_guards.py)
    pytest.param(dict(kind="bn", dtype="float16", layout="NHWC", n=2, c=24, k=40, hw=15), id="fp16_nhwc_24_channels"),
    pytest.param(dict(kind="residual", dtype="float16", layout="NHWC", n=3, c=40, k=24, hw=17),
                 id="fp16_nhwc_40_channels"),
]


def chain_reference(g, feeds: dict, kind: str, layout: str, groups: int):
    """float64 reference for `conv_chain` from the graph's own constants."""
    ax = 1 if layout == "NCHW" else 3
    const = {n.name: n.value.astype(np.float64) for n in g.constants}
    y = conv2d(feeds["x"], const["w"], padding=1, layout=layout, groups=groups)
    shape = [1, 1, 1, 1]
    shape[ax] = -1
    y = y + const["bias"].reshape(shape)
    if kind == "residual":
        y = y + feeds["res"].astype(np.float64)
    else:
        y = batch_norm(y, const["gamma"], const["beta"], const["mean"], const["var"], axis=ax)
    return np.maximum(y, 0)


def _feeds(g, rng):
    return {i.name: rng.standard_normal(i.shape).astype(i.dtype) for i in g.inputs}


def _tol(dtype):
    return dict(rtol=1e-2, atol=5e-2) if dtype == "float16" else dict(rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kw", CHAINS)
def test_conv_chain_numpy_inputs(rng, kw):
    g = conv_chain(**kw)
    cg = tefuse.build(g, "cuda")
    assert cg.num_kernels == 1
    feeds = _feeds(g, rng)
    (y,) = cg.run(**feeds)
    ref = chain_reference(g, feeds, kw.get("kind", "bn"), kw.get("layout", "NCHW"), kw.get("groups", 1))
    dtype = kw.get("dtype", "float32")
    err = assert_close(y, ref, dtype, **_tol(dtype), what=str(kw))
    print(f"\n{kw}: max abs err {err:.3g} (|ref| max {np.abs(ref).max():.3g})")


@pytest.mark.parametrize("kw", [CHAINS[0], CHAINS[1], CHAINS[4], CHAINS[6]])
def test_conv_chain_dlpack_inputs(rng, kw):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    g = conv_chain(**kw)
    cg = tefuse.build(g, "cuda")
    feeds = _feeds(g, rng)
    tfeeds = {k: torch.from_numpy(v).cuda() for k, v in feeds.items()}
    (y,) = cg.run(**tfeeds, as_numpy=False)
    yt = torch.from_dlpack(y)  # the result goes back to torch without a copy
    assert yt.is_cuda and tuple(yt.shape) == g.outputs[0].shape
    ref = chain_reference(g, feeds, kw.get("kind", "bn"), kw.get("layout", "NCHW"), kw.get("groups", 1))
    dtype = kw.get("dtype", "float32")
    err = assert_close(yt.cpu().numpy(), ref, dtype, **_tol(dtype), what=str(kw))
    print(f"\n{kw} (torch.cuda in/out): max abs err {err:.3g}")


def test_conv_chain_tvm_tensor_inputs(rng):
    """Device tensors made by TVM are used as they are (any DLPack producer works the same)."""
    import tvm

    g = conv_chain(kind="residual")
    cg = tefuse.build(g, "cuda")
    feeds = _feeds(g, rng)
    dev = tvm.cuda(0)
    (y,) = cg.run(**{k: tvm.runtime.tensor(v, dev) for k, v in feeds.items()})
    err = assert_close(y, chain_reference(g, feeds, "residual", "NCHW", 1), rtol=1e-4, atol=1e-4)
    print(f"\ntvm tensors: max abs err {err:.3g}")


def test_adam_step_gpu(rng):
    g = adam_graph(shape=(1000, 129))
    cg = tefuse.build(g, "cuda")
    assert cg.num_kernels == 1
    feeds = adam_inputs(rng, (1000, 129))
    outs = cg.run(*feeds)
    for got, ref, name in zip(outs, adam_reference(*feeds), ["param", "m", "v"]):
        err = assert_close(got, ref, rtol=1e-5, atol=1e-6, what=name)
        print(f"\nadam {name}: max abs err {err:.3g}")


@pytest.mark.parametrize("op,attrs,shape", [
    ("max_pool2d", dict(kernel=3, strides=2, padding=1), (2, 8, 9, 9)),
    ("avg_pool2d", dict(kernel=3, strides=2, padding=1, ceil_mode=True), (2, 8, 9, 9)),
    ("reduce_mean", dict(axes=(1,)), (7, 33)),
    ("softmax", dict(), (5, 40)),
])
def test_other_anchors_gpu_match_llvm(rng, op, attrs, shape):
    b = tefuse.GraphBuilder()
    x = b.input("x", shape)
    g = b.build(b.relu(b.op(op, b.mul(x, b.const(np.float32(0.5))), **attrs)))
    xv = rng.standard_normal(shape).astype("float32")
    (gpu,) = tefuse.build(g, "cuda").run(xv)
    (cpu,) = tefuse.build(g, "llvm").run(xv)
    assert_close(gpu, cpu.astype(np.float64), rtol=1e-5, atol=1e-5, what=op)
