"""CUDA builds over dim ranges, without a GPU: injective and reduction kernels take the symbolic
dims as run-time arguments and compile with nvcc, and so do a float32 CNN's convs and classifier on
CUDA cores with a symbolic batch; an anchor whose templates size their tiles from fixed shapes (a
symbolic reduction on CUDA cores) is refused in one line naming it, and so is a schedule whose
tiles a run-time dim sizes. (Tensor-core GEMMs: tests/schedules/cuda/gemm/test_symbolic_m.py;
numerics: tests/gpu/test_dynamic_gpu.py.)"""
from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

import tefuse
from tefuse.codegen.compile import KernelSpec, schedule_kernel
from tefuse.codegen.lower import lower_group
from tefuse.codegen.ptx import compile_to_ptx
from tefuse.errors import BuildError, SymbolicExtentError
from tefuse.fusion import fuse_graph
from tefuse.ops.value import dim_hints
from tefuse.schedules.gpu.dense import CudaDense
from tefuse.target import make_target
from tefuse.frontend.onnx import import_onnx
from tests.frontend.dynamic_models import cnn

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
RANGES = {"B": "1:4:16", "S": "1:128:512"}


def rows_graph(batch="B", seq="S", hidden=64):
    """x + pos -> layer_norm -> relu -> softmax, and a mean over the sequence: row-wise and
    reduction kernels with symbolic rows and a symbolic reduction extent."""
    b = tefuse.GraphBuilder()
    x, p = b.input("x", (batch, seq, hidden)), b.input("pos", (batch, seq, hidden))
    h = b.layer_norm(b.add(x, p), b.const(np.linspace(0.5, 1.5, hidden, dtype="float32")),
                     b.const(np.linspace(-0.1, 0.1, hidden, dtype="float32")))
    s = b.softmax(b.relu(h))
    return b.build([s, b.reduce_mean(s, axes=[1], keepdims=False)])


@pytest.fixture(scope="module")
def dynamic_rows():
    return tefuse.build(rows_graph(), "cuda:sm_90", dynamic=RANGES)


@needs_nvcc
def test_injective_and_reduction_kernels_take_symbolic_dims(dynamic_rows):
    exact = tefuse.build(rows_graph(4, 128), "cuda:sm_90")
    assert dynamic_rows.num_kernels == exact.num_kernels
    assert [k.template for k in dynamic_rows.kernels] == [k.template for k in exact.kernels]
    for k in dynamic_rows.kernels:
        src = k.source("cuda")
        (params,) = re.findall(r'__global__ void (?:__launch_bounds__\(\d+\) )?\w+\(([^)]*)\)\s*\{', src)
        # the dims (or an expression of them, B * S) are scalar arguments of the kernel, 32-bit:
        # every tensor fits int32 indices over the ranges
        assert re.search(r"\bint \w+", params) and "int64_t" not in params, (k.group.name, params)
        assert ".entry" in compile_to_ptx(src, "sm_90")


def test_a_float32_cnn_with_a_symbolic_batch_builds_on_cuda_cores():
    """Direct convs with the batch on the grid and the classifier a block a row: every kernel takes
    N as an argument and compiles."""
    cg = tefuse.build(import_onnx(cnn("N"), dynamic=True), "cuda:sm_80", dynamic={"N": "1:4:8"})
    assert [k.template for k in cg.kernels if k.group.anchor is not None] == [
        "conv2d_direct", "cuda_cross_thread_reduction", "conv2d_direct", "cuda_dense"]
    for k in cg.kernels:
        src = k.source("cuda")
        (params,) = re.findall(r'__global__ void (?:__launch_bounds__\(\d+\) )?\w+\(([^)]*)\)\s*\{', src)
        assert re.search(r"\bint N\b", params), (k.group.name, params)
    if shutil.which("nvcc"):
        assert ".entry" in compile_to_ptx(cg.kernels[0].source("cuda"), "sm_80")


def _symbolic_k_dense():
    b = tefuse.GraphBuilder()
    return b.build(b.relu(b.dense(b.input("x", (4, "K")), b.input("w", (16, "K")))))


def test_an_anchor_without_a_symbolic_template_is_refused_in_one_line():
    """A float32 GEMM whose reduction is symbolic: the CUDA-core dense tiles K, and takes symbolic
    rows alone."""
    with pytest.raises(SymbolicExtentError) as e:
        tefuse.build(_symbolic_k_dense(), "cuda:sm_90", dynamic={"K": "8:64:256"})
    msg = str(e.value)
    assert "\n" not in msg
    assert "(anchor 'dense_0', dense)" in msg and "symbolic extent" in msg and "--batch" in msg


def test_a_tile_sized_by_a_run_time_dim_is_refused_in_one_line():
    """A schedule whose shared tile follows a symbolic extent's predicated tail (the CUDA-core
    dense's over a symbolic K, which is why it does not take one) is one BuildError naming the
    buffer, not a failure in TVM's CUDA codegen."""
    with dim_hints({"K": 64}):
        (group,) = fuse_graph(_symbolic_k_dense())
        low = lower_group(group)
    target = make_target("cuda:sm_80")
    t = CudaDense()
    assert not t.takes_symbolic(low.info)
    spec = KernelSpec(group.name, low.func, low.info, t, t.fallback(low.info, target, t.space(low.info, target)))
    with pytest.raises(BuildError) as e:
        schedule_kernel(spec, target)
    msg = str(e.value)
    assert "\n" not in msg and "(shared) sized by a dim bound at run time" in msg


def _conv_64(batch="N"):
    """An fp16 NHWC 1x1 conv, 64 -> 64 channels over 28x28 (M = 784 rows an image): wgmma's
    untuned tile follows M (fallback_values: 64x64 blocks for a small grid, 128x64 for a big one)."""
    b = tefuse.GraphBuilder()
    x, w = b.input("x", (batch, 28, 28, 64), "float16"), b.input("w", (64, 1, 1, 64), "float16")
    return b.build(b.relu(b.conv2d(x, w, layout="NHWC", weight_layout="OHWI")))


@pytest.fixture(scope="module")
def bucketed_conv():
    return tefuse.build(_conv_64(), "cuda:sm_90", dynamic={"N": "1:8:64"})


def _rows_a_block(kernel) -> int:
    """The block tile's rows: the grid's blockIdx.y is the padded rows over them."""
    tir = re.sub(r"T\.int64\((\d+)\)", r"\1", kernel.tir)  # the same at either index type
    (rows,) = set(re.findall(r"\(N \* 784 \+ \d+\) // (\d+)", tir))
    return int(rows)


def test_a_tensor_core_conv_gets_a_variant_for_the_large_bucket_with_larger_tiles(bucketed_conv):
    """Default buckets 1, 2-8 and 9-64: the small two take the opt (8) kernel's 64-row tiles (one
    module, shared), the large one a variant of 128-row tiles; both take N at run time."""
    cg = bucketed_conv
    assert [str(b) for b in cg.buckets.buckets[0]] == ["1", "2-8", "9-64"]
    assert cg.num_kernels == 1 and cg.num_variants == 1 and set(cg.variants[0]) == {(2,)}
    small, mid, large = (cg.kernels_for({"N": n})[0] for n in (1, 8, 64))
    assert small is mid is cg.kernels[0] and large is not small
    assert (small.template, large.template) == ("wgmma_gemm", "wgmma_gemm")
    assert _rows_a_block(small) == 64 < _rows_a_block(large) == 128
    for k in (small, large):
        assert re.search(r"__global__ void (?:__launch_bounds__\(\d+\) )?\w+\([^)]*\bint N\)", k.source("cuda"))
    assert cg.source("cuda").count("// ---- g0_conv2d_relu") == 2  # the kernel and its variant
    assert "at N=9-64: [wgmma_gemm" in cg.summary()


def test_one_bucket_compiles_the_tensor_core_conv_once():
    cg = tefuse.build(_conv_64(), "cuda:sm_90", dynamic={"N": "1:8:64"}, buckets=False)
    assert cg.num_variants == 0 and not cg.variants
    assert _rows_a_block(cg.kernels_for({"N": 64})[0]) == 64


def _two_conv_blocks(batch="N"):
    """Two identical fp16 NHWC 1x1 convs (64 -> 64 over 28x28, ReLU) one after the other, with the
    same weight: ResNet's repeated blocks in small."""
    b = tefuse.GraphBuilder()
    w = b.const(np.random.default_rng(0).standard_normal((64, 1, 1, 64)).astype("float16") * 0.1)
    x = b.input("x", (batch, 28, 28, 64), "float16")
    for _ in range(2):
        x = b.relu(b.conv2d(x, w, layout="NHWC", weight_layout="OHWI"))
    return b.build(x)


@needs_nvcc
def test_identical_symbolic_kernels_and_their_variants_share_one_module_each(monkeypatch):
    """Two kernels and a large-bucket variant of each: one module for the kernels, one for the
    variants, as an exact build shares identical kernels. Each workload is scheduled once, and
    a bucket only where its config differs from the kernel's (batch 1's does not)."""
    import tefuse.driver as driver

    scheduled = []
    prepare = driver.prepare_group
    monkeypatch.setattr(driver, "prepare_group", lambda g, *a, **kw: scheduled.append(g.name) or prepare(g, *a, **kw))
    cg = tefuse.build(_two_conv_blocks(), "cuda:sm_90", dynamic={"N": "1:8:64"})
    assert len(scheduled) == 2  # the first kernel (the second repeats its workload), and bucket 9-64
    assert cg.num_kernels == 2 and set(cg.variants) == {0, 1}
    first, second = cg.kernels
    assert first.module is second.module
    assert cg.variants[0][(2,)].module is cg.variants[1][(2,)].module is not first.module
    assert cg.build_times.compiled == 2
    assert re.search(r"\bint N\)", first.source("cuda"))


def test_identical_symbolic_kernels_compute_each_size_on_cpu():
    cg = tefuse.build(_two_conv_blocks(), "llvm", dynamic={"N": "1:8:64"})
    assert cg.num_kernels == 2 and cg.kernels[0].module is cg.kernels[1].module
    for n in (1, 8, 37):
        x = np.random.default_rng(n).standard_normal((n, 28, 28, 64)).astype("float16")
        ref = x.astype("float32")
        for _ in range(2):
            ref = np.maximum(ref @ _weight().T, 0).astype("float16").astype("float32")
        np.testing.assert_allclose(cg.run(x)[0].astype("float32"), ref, rtol=2e-2, atol=2e-2)


def _weight():
    return (np.random.default_rng(0).standard_normal((64, 1, 1, 64)).astype("float16") * 0.1
            ).astype("float32").reshape(64, 64)
