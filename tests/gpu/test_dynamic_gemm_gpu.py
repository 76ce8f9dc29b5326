"""Tensor-core GEMMs over a symbolic M on a real GPU: one CUDA build of a small fp16 NHWC conv net
(3x3, strided 3x3 and 1x1 convs with bias, residual and ReLU epilogues, a global pool and a
classifier whose M is the batch), of a Linear over N*S rows (M = N * 77), of one over [2, S] tokens
with its GELU fused (rows split by the run-time S), of a deep conv whose small-batch bucket runs
split-K, and of attention's two
products over a symbolic sequence gives llvm's values at several sizes. The build itself (no
GPU): tests/schedules/cuda/gemm/test_symbolic_m.py.

Deselected by default; run with
    python -m pytest -m gpu tests/gpu/test_dynamic_gemm_gpu.py -q
"""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse.target import device_caps, make_target

pytestmark = pytest.mark.gpu
RANGES = {"N": "1:8:32"}
SIZES = (1, 5, 32)


def conv_net(batch="N"):
    rng = np.random.default_rng(0)
    b = tefuse.GraphBuilder()

    def const(*shape, scale=0.1):
        return b.const((rng.standard_normal(shape) * scale).astype("float16"))

    x = b.input("x", (batch, 14, 14, 16), "float16")
    h = b.relu(b.bias_add(b.conv2d(x, const(32, 3, 3, 16), padding=1, layout="NHWC", weight_layout="OHWI"),
                          const(32), axis=3))
    s = b.relu(b.bias_add(b.conv2d(h, const(64, 3, 3, 32), padding=1, strides=2, layout="NHWC",
                                   weight_layout="OHWI"), const(64), axis=3))
    r = b.conv2d(s, const(64, 1, 1, 64), layout="NHWC", weight_layout="OHWI")
    y = b.relu(b.add(b.bias_add(r, const(64), axis=3), s))
    pooled = b.flatten(b.global_avg_pool2d(y, layout="NHWC"))
    return b.build([y, b.bias_add(b.dense(pooled, const(32, 64)), const(32), axis=1)])


def linear(batch="N"):
    rng = np.random.default_rng(1)
    b = tefuse.GraphBuilder()
    x = b.input("x", (batch, 77, 64), "float16")
    w = b.const((rng.standard_normal((96, 64)) * 0.1).astype("float16"))
    rows = b.reshape(x, shape=(-1, 64))
    return b.build(b.gelu(b.bias_add(b.dense(rows, w), b.const(np.linspace(-1, 1, 96, dtype="float16")), axis=1)))


def tokens(seq="N"):
    """A Linear over [2, seq, 64] tokens with a GELU epilogue: rows 2*seq written back as
    [2, seq, 96] (rows // seq, rows % seq), erf computed a lane at a time, fused."""
    rng = np.random.default_rng(2)
    b = tefuse.GraphBuilder()
    x = b.input("x", (2, seq, 64), "float16")
    w = b.const((rng.standard_normal((96, 64)) * 0.1).astype("float16"))
    return b.build(b.gelu(b.bias_add(b.matmul(x, w, trans_b=True), b.const(np.linspace(-1, 1, 96, dtype="float16")),
                                     axis=2)))


def attention(seq="N"):
    """softmax(q k^T / 8) v over a symbolic sequence (two heads of 64): the products' M, N and K
    symbolic, the unfused path."""
    b = tefuse.GraphBuilder()
    q, k, v = (b.input(name, (2, seq, 64), "float16") for name in "qkv")
    scores = b.mul(b.matmul(q, b.transpose(k, axes=(0, 2, 1))), b.const(np.array(0.125, "float16")))
    return b.build(b.matmul(b.softmax(scores), v))


GRAPHS = {"conv_net": conv_net, "linear": linear, "tokens": tokens, "attention": attention}


@pytest.fixture(scope="module", params=sorted(GRAPHS))
def builds(request):
    graph = GRAPHS[request.param]
    arch = device_caps(make_target("cuda")).arch
    cuda = tefuse.build(graph(), "cuda", dynamic=RANGES)
    gemms = [k.template for k in cuda.kernels if k.template in ("tensorcore_gemm", "wgmma_gemm")]
    assert gemms, (arch, [k.template for k in cuda.kernels])
    return graph, cuda, tefuse.build(graph(), "llvm", dynamic=RANGES)


@pytest.mark.parametrize("n", SIZES)
def test_one_cuda_build_matches_llvm_at_each_batch(builds, n, rng):
    graph, cuda, llvm = builds
    feeds = {p.name: rng.standard_normal([int(d) for d in p.shape]).astype("float16") for p in graph(n).inputs}
    got, want = cuda.run(**feeds), llvm.run(**feeds)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        w = w.astype("float32")
        np.testing.assert_allclose(g.astype("float32"), w, rtol=2e-2, atol=2e-2 * np.abs(w).max())


def deep_conv(batch="N"):
    """ResNet-50's last-stage 3x3 conv (512 channels at 7x7) with bias and ReLU: at a batch of a
    few images its grid is too small, and the bucket 1-4 of a 1:32:64 build runs it split-K."""
    rng = np.random.default_rng(3)
    b = tefuse.GraphBuilder()
    x = b.input("x", (batch, 7, 7, 512), "float16")
    w = b.const((rng.standard_normal((512, 3, 3, 512)) * 0.02).astype("float16"))
    y = b.conv2d(x, w, padding=1, layout="NHWC", weight_layout="OHWI")
    return b.build(b.relu(b.bias_add(y, b.const(rng.standard_normal(512).astype("float16")), axis=3)))


def test_a_small_batch_bucket_runs_its_split_k_pair_and_matches_llvm(rng):
    from tefuse.runtime.kernel import SplitKernel

    cuda = tefuse.build(deep_conv(), "cuda", dynamic={"N": "1:32:64"})
    llvm = tefuse.build(deep_conv(), "llvm", dynamic={"N": "1:32:64"})
    assert isinstance(cuda.kernels_for({"N": 1})[0], SplitKernel)
    assert not isinstance(cuda.kernels_for({"N": 32})[0], SplitKernel)
    for n in (1, 3, 4, 8):  # the pair at 1-4, the kernel at 8
        x = rng.standard_normal((n, 7, 7, 512)).astype("float16")
        (got,), (want,) = cuda.run(x), llvm.run(x)
        want = want.astype("float32")
        np.testing.assert_allclose(got.astype("float32"), want, rtol=2e-2, atol=2e-2 * np.abs(want).max())
