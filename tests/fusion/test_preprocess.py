"""Pre-processing pipelines fuse into one kernel: the 4K RGB image's five crops (different
sizes, run-time rectangles) resized keeping the aspect ratio, normalised and swapped to BGR, and
the NV12 frame's crop -> RGB -> resize -> normalise -> planar; on llvm (numerics against the
bench's numpy reference, new rectangles on the same build) and on CUDA (one kernel, and its
source builds with nvcc). The horizontally fused launch equals the crops computed apart."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import tefuse
from tefuse.bench import preprocess as P
from tefuse.graph.ir import GraphBuilder

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


@pytest.fixture(scope="module")
def rgb():
    case = P.rgb_case()
    return case, tefuse.build(case.graph, "llvm")


def test_reference_workload_is_one_kernel_with_run_time_rectangles(rgb):
    case, cg = rgb
    assert cg.num_kernels == 1
    got = cg.run(**case.feeds)[0]
    assert got.shape == (5, 60, 60, 3) and got.dtype == np.float32
    np.testing.assert_allclose(got, case.expected, atol=1e-5)
    again = {**case.feeds, "rects": np.asarray(P.RGB_RECTS_AGAIN, np.int32)}
    np.testing.assert_allclose(cg.run(**again)[0], case.expected_again, atol=1e-5)


def test_horizontal_fusion_equals_the_crops_apart(rgb):
    """Each crop its own rectangles input and its own kernel: the same numbers as its plane of
    the one launch."""
    case, cg = rgb
    b = GraphBuilder()
    img = b.input("image", P.RGB_IMAGE, "uint8")
    outs = []
    for k in range(len(P.RGB_RECTS)):
        r = b.crop_resize(img, b.input(f"rects{k}", (1, 4), "int32"), size=P.RGB_SIZE, mode="linear",
                          keep_aspect_ratio=True, background=P.BACKGROUND)
        outs.append(b.color_convert(b.normalize(r, mul=P.MUL, sub=P.SUB, div=P.DIV), code="rgb2bgr"))
    apart = tefuse.build(b.build(outs), "llvm")
    assert apart.num_kernels == len(P.RGB_RECTS)
    planes = apart.run(case.feeds["image"], *[np.asarray([r], np.int32) for r in P.RGB_RECTS])
    fused = cg.run(**case.feeds)[0]
    for k, plane in enumerate(planes):
        np.testing.assert_array_equal(fused[k:k + 1], plane)


def test_nv12_pipeline_is_one_kernel():
    case = P.nv12_case(rects=P.NV12_RECTS[:2], size=(32, 32))
    cg = tefuse.build(case.graph, "llvm")
    assert cg.num_kernels == 1
    np.testing.assert_allclose(cg.run(**case.feeds)[0], case.expected, atol=1e-4)


@needs_nvcc
@pytest.mark.parametrize("graph", [pytest.param(P.rgb_graph, marks=pytest.mark.slow, id="rgb"),
                                   pytest.param(P.nv12_graph, id="nv12")])
def test_one_cuda_kernel_that_nvcc_builds(graph, tmp_path):
    cg = tefuse.build(graph(), "cuda:sm_90")
    assert cg.num_kernels == 1
    src = tmp_path / "k.cu"
    src.write_text(cg.kernels[0].source("cuda"))
    subprocess.run(["nvcc", "-arch=sm_90", "-c", str(src), "-o", str(tmp_path / "k.o")], check=True,
                   capture_output=True, text=True)


def _resizes_of_different_sizes():
    """One image, three crops resized to their own sizes (24x40, 10x12, 30x30), normalised: three
    independent pipelines with outputs of different shapes."""
    b = GraphBuilder()
    img = b.input("image", P.RGB_IMAGE, "uint8")
    outs = []
    for k, size in enumerate([(24, 40), (10, 12), (30, 30)]):
        r = b.crop_resize(img, b.input(f"rects{k}", (1, 4), "int32"), size=size, mode="linear")
        outs.append(b.normalize(r, mul=P.MUL, sub=P.SUB, div=P.DIV))
    return b.build(outs)


@pytest.mark.parametrize("target", ["llvm", "cuda:sm_90"])
def test_resizes_of_different_sizes_share_one_launch(target):
    """Divergent horizontal fusion of planes of different sizes: each resize keeps its own output
    and its own thread blocks, one launch for all; the same numbers as the resizes apart."""
    from tefuse.options import BuildOptions

    g = _resizes_of_different_sizes()
    merged = tefuse.build(g, target, options=BuildOptions(horizontal=True))
    apart = tefuse.build(g, target)
    assert (merged.num_kernels, apart.num_kernels) == (1, 3)
    if target != "llvm":
        from tefuse.codegen.ptx import cuda_kernel_names

        assert cuda_kernel_names(merged.kernels[0].source("cuda")) == ["main_kernel"]
        return
    rng = np.random.default_rng(5)
    feeds = {"image": rng.integers(0, 256, P.RGB_IMAGE, dtype=np.uint8)}
    feeds.update({f"rects{k}": np.asarray([r], np.int32) for k, r in enumerate(P.RGB_RECTS[:3])})
    for got, want in zip(merged.run(**feeds), apart.run(**feeds)):
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)
