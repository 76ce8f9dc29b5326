"""CUDA code generation without a GPU: one kernel per fused chain, no global buffer for the
conv result, nvcc compiles it to PTX for sm_90. (ROCm: test_rocm_codegen.py.)"""
from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

import tefuse
from tefuse import GraphBuilder
from tefuse.codegen.ptx import compile_to_ptx, cuda_kernel_names, ptx_entries
from tests.fusion.test_fuse_ops import adam_graph

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


def conv_chain(kind="bn", layout="NCHW", groups=1, dtype="float32", n=1, c=64, hw=56, k=64, seed=0):
    """conv2d(3x3, pad 1) + bias + (batch_norm | add(residual)) + relu, constants for params."""
    rng = np.random.default_rng(seed)
    b = GraphBuilder()
    xs = (n, c, hw, hw) if layout == "NCHW" else (n, hw, hw, c)
    ws = (k, c // groups, 3, 3) if layout == "NCHW" else (3, 3, c // groups, k)
    ax = 1 if layout == "NCHW" else 3
    x = b.input("x", xs, dtype)
    w = b.const((rng.standard_normal(ws) * 0.2).astype(dtype), name="w")
    y = b.conv2d(x, w, padding=1, layout=layout, groups=groups, name="conv")
    y = b.bias_add(y, b.const(rng.standard_normal(k).astype(dtype), name="bias"), axis=ax, name="biased")
    if kind == "residual":
        y = b.add(y, b.input("res", y.shape, dtype), name="summed")
    else:
        params = [rng.uniform(0.5, 1.5, k), rng.standard_normal(k), rng.standard_normal(k), rng.uniform(0.5, 2, k)]
        y = b.batch_norm(y, *(b.const(p.astype(dtype), name=nm) for p, nm in
                              zip(params, ["gamma", "beta", "mean", "var"])), axis=ax, name="bn")
    return b.build(b.relu(y, name="out"))


def kernel_params(src: str, name: str) -> list[tuple[str, str]]:
    """(type, name) of the pointer parameters of kernel `name`'s definition."""
    m = re.search(rf"\b{name}\s*\(([^)]*)\)\s*\{{", src)
    assert m, f"no definition of {name}"
    out = []
    for p in m.group(1).split(","):
        p = p.strip()
        pm = re.match(r"(\w+)\s*\*\s*(?:__restrict__\s+)?(\w+)$", p)
        if pm:
            out.append((pm.group(1), pm.group(2)))
    return out


def _expected_buffers(g) -> set[str]:
    """in_<name> for every graph input and non-scalar constant, out_<name> for outputs."""
    ins = {f"in_{n.name}" for n in g.inputs} | {f"in_{n.name}" for n in g.constants if n.value.size > 1}
    return ins | {f"out_{o.name}" for o in g.outputs}


CHAINS = [
    pytest.param(dict(kind="bn"), id="conv_bias_bn_relu"),
    pytest.param(dict(kind="residual"), id="conv_bias_add_relu"),
    pytest.param(dict(kind="bn", layout="NHWC"), id="nhwc_bn"),
    pytest.param(dict(kind="residual", layout="NHWC"), id="nhwc_residual"),
    pytest.param(dict(kind="bn", groups=64), id="depthwise_bn"),
    pytest.param(dict(kind="bn", layout="NHWC", groups=64), id="depthwise_nhwc_bn"),
    pytest.param(dict(kind="bn", dtype="float16"), id="fp16_bn"),
    pytest.param(dict(kind="residual", dtype="float16", layout="NHWC"), id="fp16_nhwc_residual"),
]


@pytest.fixture(scope="module")
def built():
    cache = {}

    def get(**kw):
        key = tuple(sorted(kw.items()))
        if key not in cache:
            g = conv_chain(**kw)
            cache[key] = (g, tefuse.build(g, "cuda"))
        return cache[key]

    return get


@pytest.mark.parametrize("kw", CHAINS)
def test_conv_chain_is_one_cuda_kernel(built, kw):
    g, cg = built(**kw)
    assert cg.num_kernels == 1
    src = cg.kernels[0].source("cuda")
    names = cuda_kernel_names(src)
    assert len(names) == 1, names
    params = kernel_params(src, names[0])
    # only the graph's inputs, its non-scalar constants and its output: no global buffer
    # for the conv result (or any other intermediate); the built graph's (on sm_90 an fp16
    # NHWC conv reads its weight as an OHWI copy, graph/weights.py)
    assert {p for _, p in params} == {f"{b}_ptr" for b in _expected_buffers(cg.graph)}
    ctype = "half" if kw.get("dtype") == "float16" else "float"
    # a batch-norm's folded scale and shift are float32, the type an fp16 batch-norm computes in
    folded = {f"in_{i.name}_ptr" for n in cg.graph.nodes if n.op == "scale_shift" for i in n.inputs[1:]}
    assert all(t == ("float" if p in folded else ctype) for t, p in params), params
    # the accumulators live in registers: a thread's array of them (mma's fragments; CUDA cores' local tile)
    assert re.search(r"(float|half) \w+_(warp|local)_ptr\[\d+\];", src)


@pytest.mark.parametrize("kw", CHAINS)
def test_conv_chain_stages_tiles_in_shared_memory(built, kw):
    _, cg = built(**kw)
    src = cg.kernels[0].source("cuda")
    if kw.get("groups", 1) == kw.get("c", 64):
        # depthwise: conv2d_depthwise's fallback reads the window straight from global memory
        # (L1 serves the reuse; measured faster than staging on H100); its `stage` knob
        # stages in shared memory instead (tests/schedules/gpu/test_conv2d_depthwise.py)
        assert cg.kernels[0].template == "conv2d_depthwise"
        assert "__shared__" not in src and "__syncthreads()" not in src
        return
    assert "__shared__" in src
    assert "__syncthreads()" in src


@needs_nvcc
@pytest.mark.parametrize("kw", [CHAINS[0], CHAINS[1], CHAINS[4], CHAINS[6]])
def test_conv_chain_compiles_to_sm90_ptx(built, kw):
    _, cg = built(**kw)
    src = cg.kernels[0].source("cuda")
    ptx = compile_to_ptx(src, "sm_90")
    assert re.search(r"^\.target\s+sm_90\b", ptx, re.M), ptx[:400]
    assert ptx_entries(ptx) == cuda_kernel_names(src)


def test_graph_source_concatenates_kernels(built):
    g, cg = built(kind="residual")
    assert cuda_kernel_names(cg.source("cuda")) == cuda_kernel_names(cg.kernels[0].source("cuda"))


def test_adam_step_is_one_cuda_kernel():
    g = adam_graph(shape=(1024, 257))
    cg = tefuse.build(g, "cuda")
    assert cg.num_kernels == 1
    src = cg.source("cuda")
    (name,) = cuda_kernel_names(src)
    params = [p for _, p in kernel_params(src, name)]
    ins = {f"in_{n}_ptr" for n in ("param", "grad", "m", "v")}
    assert ins <= set(params)
    assert len(params) == 7, params  # 4 inputs, 3 outputs (one multi-output compute), nothing else


@needs_nvcc
def test_adam_ptx():
    src = tefuse.build(adam_graph(shape=(300,)), "cuda").source("cuda")
    ptx = compile_to_ptx(src, "sm_90")
    assert len(ptx_entries(ptx)) == 1


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("groups", [1, 4, 16])
def test_small_convs_build_for_cuda(layout, groups):
    g = conv_chain(layout=layout, groups=groups, c=16, k=32 if groups != 16 else 16, hw=9, n=2)
    cg = tefuse.build(g, "cuda")
    assert cg.num_kernels == 1
    assert len(cuda_kernel_names(cg.source("cuda"))) == 1


@pytest.mark.parametrize("op,attrs,shape", [
    ("max_pool2d", dict(kernel=3, strides=2, padding=1), (1, 8, 9, 9)),
    ("avg_pool2d", dict(kernel=3, strides=2, padding=1, ceil_mode=True), (1, 8, 9, 9)),
    ("reduce_mean", dict(axes=(1,)), (7, 33)),
    ("softmax", dict(), (5, 40)),
    ("lrn", dict(), (1, 8, 4, 4)),
    ("transpose", dict(axes=(1, 0)), (13, 7)),
])
def test_other_anchors_build_for_cuda(op, attrs, shape):
    b = GraphBuilder()
    x = b.input("x", shape)
    y = b.relu(b.op(op, b.exp(x), **attrs))
    cg = tefuse.build(b.build(y), "cuda")
    src = cg.source("cuda")
    assert len(cuda_kernel_names(src)) >= 1


def test_dense_chain_is_one_kernel():
    b = GraphBuilder()
    x = b.input("x", (8, 64))
    w = b.const(np.zeros((32, 64), "float32"), name="w")
    bias = b.const(np.zeros(32, "float32"), name="bias")
    y = b.gelu(b.bias_add(b.dense(x, w), bias))
    cg = tefuse.build(b.build(y), "cuda")
    assert len(cuda_kernel_names(cg.source("cuda"))) == 1
