"""graph/split_k.py: which convs and Linears split and how far (ResNet-50's and ViT-B/16's shapes
on 132 SMs), the rewrite
(conv2d(split_k) -> split_sum under the conv's name, consumers rewired, nothing else touched),
and the built graph on llvm: two kernels, the same numbers as the unsplit one."""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse.graph import GraphBuilder
from tefuse.graph.split_k import SplitPolicy, conv_splits, matmul_splits, split_k
from tefuse.schedules.cuda.gemm.cluster import cluster_split
from tefuse.schedules.cuda.gemm.tiles import MIN_MN
from tefuse.schedules.policy import in_kernel_split

H100 = SplitPolicy(sms=132, min_mn=MIN_MN)


def _conv(n, hw, c, k, r, dtype="float16", layout="NHWC", groups=1, math=None, const=True):
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x = b.input("x", (n, hw, hw, c) if layout == "NHWC" else (n, c, hw, hw), dtype)
    wshape = (r, r, c // groups, k) if layout == "NHWC" else (k, c // groups, r, r)
    wv = (rng.standard_normal(wshape) / np.sqrt(c * r * r)).astype(dtype)
    w = b.const(wv) if const else b.input("w", wshape, dtype)
    attrs = {"math": math} if math else {}
    y = b.conv2d(x, w, padding=r // 2, layout=layout, groups=groups, name="conv", **attrs)
    bias = b.input("bias", (k,), dtype)
    return b.build(b.relu(b.bias_add(y, bias, axis=-1 if layout == "NHWC" else 1), name="out"))


@pytest.mark.parametrize("shape,want", [
    ((1, 7, 512, 512, 3), 16),  # 4 tiles of a 4608-deep reduction
    ((1, 7, 2048, 512, 1), 8),
    ((1, 14, 256, 256, 3), 8),
    ((1, 14, 1024, 256, 1), 4),  # 1024 deep: slices keep 256
    ((1, 28, 128, 128, 3), 4),
    ((1, 7, 512, 2048, 1), 1),  # 512 deep: over too soon to pay for a second kernel
    ((16, 7, 512, 512, 3), 4),  # 52 tiles at batch 16
    ((16, 7, 2048, 512, 1), 1),  # 104 tiles of 64 x 64 fill 3/4 of the SMs; 2048 deep is too short
    ((8, 14, 1024, 256, 1), 1),  # 100 such tiles, 1024 deep
    ((8, 14, 256, 256, 3), 4),  # 100 such tiles, but 2304 deep
    ((1, 56, 64, 64, 3), 1),  # 49 tiles of 64 x 64, but 576 deep
    ((1, 14, 256, 1024, 1), 1),  # 256 deep: nothing to split
    ((16, 14, 1024, 256, 1), 1),  # 98 tiles: the grid is more than half full
    ((32, 7, 512, 512, 3), 1),
])
def test_resnet50_shapes_on_an_h100(shape, want):
    n, hw, c, k, r = shape
    conv = _conv(n, hw, c, k, r).node("conv")
    assert conv_splits(conv, H100) == want


@pytest.mark.parametrize("kw,why", [
    (dict(dtype="float32"), "float32 without math='tf32' is no tensor-core product"),
    (dict(layout="NCHW"), "NCHW"),
    (dict(groups=2), "grouped"),
])
def test_left_alone(kw, why):
    g = _conv(1, 7, 512, 512, 3, **kw)
    assert split_k(g, H100) is g, why


def test_tf32_convs_split_with_4_channel_chunks():
    conv = _conv(1, 7, 512, 512, 3, dtype="float32", math="tf32").node("conv")
    assert conv_splits(conv, H100) == 16


def test_the_rewrite_keeps_the_name_and_rewires_the_epilogue():
    g = _conv(1, 7, 512, 512, 3, const=False)
    s = split_k(g, H100)
    total = s.node("conv")
    assert total.op == "split_sum" and total.dtype == "float16" and total.shape == (1, 7, 7, 512)
    (part,) = total.inputs
    assert part.op == "conv2d" and part.attrs["split_k"] == 16 and part.shape == (16, 1, 7, 7, 512)
    assert part.dtype == "float32" and part.inputs[1].name == "w"
    assert s.node("out").inputs[0].inputs[0] is total
    assert [n.op for n in s.nodes if n.is_op] == ["conv2d", "split_sum", "bias_add", "relu"]


def test_built_on_llvm_two_kernels_with_the_unsplit_numbers():
    g = _conv(1, 7, 256, 64, 3, const=False)
    s = split_k(g, SplitPolicy(sms=132, min_mn=MIN_MN, min_depth=64, min_total=512))
    assert s.node("conv").inputs[0].attrs["split_k"] == 16
    rng = np.random.default_rng(1)
    feed = {"x": rng.standard_normal((1, 7, 7, 256)).astype("float16"),
            "w": (rng.standard_normal((3, 3, 256, 64)) / 48).astype("float16"),
            "bias": rng.standard_normal(64).astype("float16")}
    split_cg = tefuse.build(s, "llvm")
    assert len(split_cg.kernels) == 2  # the partial products; their sum with the epilogue
    got = split_cg.run(**feed)[0].astype(np.float32)
    want = tefuse.build(g, "llvm").run(**feed)[0].astype(np.float32)
    assert np.abs(got - want).max() <= 2e-3 * np.abs(want).max()


def _linear(rows, k, n, dtype="float16", alpha=None):
    """ViT's MLP down-projection as graph/weights.py leaves it: x[1, rows, K] @ w[N, K].T + bias."""
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x = b.input("x", (1, rows, k), dtype)
    w = b.const((rng.standard_normal((n, k)) / np.sqrt(k)).astype(dtype))
    attrs = {"alpha": alpha} if alpha else {}
    y = b.matmul(x, w, trans_b=True, name="fc", **attrs)
    return b.build(b.add(y, b.input("bias", (n,), dtype), name="out"))


@pytest.mark.parametrize("rows,k,n,want", [
    (197, 3072, 768, 8),  # ViT-B/16's fc2 at batch 1: 24 tiles
    (197, 768, 3072, 1),  # fc1: 96 tiles, 768 deep
    (197, 768, 768, 1),  # the attention's output projection: 768 deep
    (32 * 197, 3072, 768, 1),  # batch 32: plenty of tiles
])
def test_vit_linears_on_an_h100(rows, k, n, want):
    assert matmul_splits(_linear(rows, k, n).node("fc"), H100) == want


def test_a_scaled_product_is_left_alone():
    g = _linear(197, 3072, 768, alpha=0.5)
    assert split_k(g, H100) is g


def test_a_split_linear_built_on_llvm_matches_the_unsplit_one():
    g = _linear(40, 512, 64)
    s = split_k(g, SplitPolicy(sms=132, min_mn=MIN_MN, min_depth=64, min_total=512))
    part = s.node("fc").inputs[0]
    assert part.attrs["split_k"] == 8 and part.shape == (8, 1, 40, 64)
    rng = np.random.default_rng(2)
    feed = {"x": rng.standard_normal((1, 40, 512)).astype("float16"),
            "bias": rng.standard_normal(64).astype("float16")}
    cg = tefuse.build(s, "llvm")
    assert len(cg.kernels) == 2
    got = cg.run(**feed)[0].astype(np.float32)
    want = tefuse.build(g, "llvm").run(**feed)[0].astype(np.float32)
    assert np.abs(got - want).max() <= 2e-3 * np.abs(want).max()


@pytest.mark.parametrize("shape", [
    (1, 1, 1152, 48, 1),  # EfficientNet-B0's squeeze-excitation conv at batch 1: M = 1
    (1, 14, 1024, 8, 3),  # 8 output channels: no tensor-core tile on N
])
def test_gemv_like_convs_are_not_split(shape):
    n, hw, c, k, r = shape
    g = _conv(n, hw, c, k, r)
    assert conv_splits(g.node("conv"), H100) == 1 and split_k(g, H100) is g


def test_a_decode_step_linear_is_not_split():
    assert matmul_splits(_linear(1, 4096, 4096).node("fc"), H100) == 1


def test_an_se_conv_still_builds_for_cuda():
    """Split, its slices (M = 1) had no template that takes them: the build failed."""
    (k,) = tefuse.build(_conv(1, 1, 1152, 48, 1), "cuda").kernels
    assert k.group.anchor.attrs.get("split_k") is None


@pytest.mark.parametrize("shape,force,want", [
    ((16, 7, 2048, 512, 1), 2, 2),  # the policy's 4 overridden
    ((16, 14, 1024, 256, 1), 4, 4),  # a grid the policy leaves whole
    ((1, 7, 512, 2048, 1), 8, 8),  # a reduction the policy finds too shallow
    ((1, 7, 24, 64, 3), 2, 1),  # 12 channels a slice: not whole 16-byte chunks
    ((1, 7, 512, 512, 3), 3, 1),  # 3 does not divide 512
])
def test_a_forced_count_splits_wherever_the_channels_allow(shape, force, want):
    """split_k=N (build, `--split-k N`): that many slices whatever the grid or depth, where the
    channels divide into slices of whole 16-byte chunks; elsewhere none."""
    n, hw, c, k, r = shape
    assert conv_splits(_conv(n, hw, c, k, r).node("conv"), SplitPolicy(sms=132, min_mn=MIN_MN, force=force)) == want


def test_build_takes_a_slice_count():
    """build(..., split_k=2) on a Hopper target: the conv is a 2-slice product and a sum. (At
    batch 1: batch 16's 512x7x7 3x3 is split inside its kernel, cluster_split, and stays one conv.)"""
    from tefuse.driver import prepare_graph

    counts = {(n, sk): [x.attrs.get("split_k", 1) for x in prepare_graph(_conv(n, 7, 512, 512, 3), "cuda:sm_90",
                                                                         precision="fp16", split_k=sk).nodes
                        if x.op == "conv2d"] for n in (1, 16) for sk in (True, False, 2)}
    assert counts == {(1, True): [16], (1, False): [1], (1, 2): [2], (16, True): [1], (16, False): [1], (16, 2): [2]}


@pytest.mark.parametrize("shape,want,cluster", [
    ((16, 7, 512, 512, 3), 1, ((128, 128), 4)),  # 112 CTAs of 1152 deep: the kernel splits it
    ((16, 7, 2048, 512, 1), 1, ((64, 128), 2)),
    ((16, 14, 256, 256, 3), 1, ((128, 128), 2)),
    ((8, 14, 256, 256, 3), 1, ((64, 128), 2)),  # 4 slices of 128x128 would be 576 deep each
    ((1, 7, 512, 512, 3), 16, None),  # 4 tiles: too few CTAs for a cluster; a second kernel's split
    ((16, 14, 1024, 256, 1), 1, None),  # 1024 deep
])
def test_a_hopper_policy_leaves_the_cluster_splits_to_the_kernel(shape, want, cluster):
    """On Hopper (in_kernel_split) the deep small grids that the wgmma template splits itself stay one
    conv (the tensor-core kernel splits them among a cluster's CTAs); the others split as before."""

    n, hw, c, k, r = shape
    conv = _conv(n, hw, c, k, r).node("conv")
    g = conv.geometry
    assert cluster_split(g.m, g.k, g.r, g.c, 8, 132) == cluster
    assert conv_splits(conv, SplitPolicy(sms=132, min_mn=MIN_MN, in_kernel=in_kernel_split)) == want
    assert cluster_split(g.m, g.k, g.r, g.c, 4, 132) is None  # tf32 (4 lanes a vector): never


@pytest.mark.parametrize("shape", [
    (16, 15, 2048, 96, 1),  # 96 output channels: no whole 128-wide tile of columns
    (1, 7, 2048, 512, 1),  # 4 tiles: too few CTAs
])
def test_no_cluster_split_without_whole_tiles_or_ctas(shape):
    """The slices' sum spreads a tile's full width over a warp: a conv whose output channels are
    not whole tiles keeps the graph's split (or none) on Hopper, as without clusters."""
    n, hw, c, k, r = shape
    conv = _conv(n, hw, c, k, r).node("conv")
    assert conv_splits(conv, SplitPolicy(sms=132, min_mn=MIN_MN, in_kernel=in_kernel_split)) == conv_splits(conv, H100)


@pytest.mark.parametrize("rows,k,n", [(128, 4096, 4096), (72, 4096, 6144), (197, 3072, 768)])
def test_linears_keep_the_graph_split_on_hopper(rows, k, n):
    """Linears never take the cluster split (their epilogues include GELU, which the slices' sum
    cannot compute 4 wide): the Hopper policy splits them as the policy without clusters does."""
    fc = _linear(rows, k, n).node("fc")
    assert matmul_splits(fc, SplitPolicy(sms=132, min_mn=MIN_MN, in_kernel=in_kernel_split)) == matmul_splits(fc, H100)


@pytest.mark.parametrize("precision,partials", [("int8", "int32"), ("fp8", "float32")])
def test_a_quantized_conv_splits_and_its_sums_are_the_unsplit_ones(precision, partials):
    """A calibrated int8 / fp8 build of a small-grid conv (batch 1, 7x7, 256 channels, 3x3) on
    Hopper: its one-byte operands' depth counts half (a 128-deep tile row is one step), so 4
    slices; the partials are int32 (fp8: float32). The prepared graph built on llvm gives the
    unsplit build's outputs: int8's bit for bit (integer sums), fp8's to the rounding of float32
    sums taken in another order."""
    from tefuse.calibrate import calibrate
    from tefuse.driver import prepare_graph

    rng = np.random.default_rng(4)
    b = GraphBuilder()
    x = b.input("input", (1, 256, 7, 7), "float32")
    w = b.const((rng.standard_normal((256, 256, 3, 3)) / 48).astype("float32"))
    bias = b.const((rng.standard_normal(256) * 0.1).astype("float32"))
    g = b.build(b.relu(b.bias_add(b.conv2d(x, w, padding=1, name="conv"), bias, axis=1), name="out"))
    feeds = [{"input": rng.standard_normal((1, 256, 7, 7)).astype("float32")} for _ in range(2)]
    cal = calibrate(g, feeds, "max")
    split = prepare_graph(g, "cuda:sm_90", precision=precision, calibration=cal)
    part = next(n for n in split.nodes if n.op == "conv2d")
    assert part.attrs["split_k"] == 4 and part.dtype == partials
    assert [n.op for n in split.nodes if n.op == "split_sum"] == ["split_sum"]
    got = tefuse.build(split, "llvm").run(**feeds[0])[0]
    want = tefuse.build(g, "llvm", precision=precision, calibration=cal).run(**feeds[0])[0]
    if precision == "int8":
        assert np.array_equal(got, want)
    else:
        assert np.abs(got - want).max() <= 2e-3 * np.abs(want).max()


def test_one_byte_operands_count_half_the_depth():
    """The same grid and channels: fp16 slices down to 256 of its elements, int8 to 256 of
    fp16's steps (512 of its own); 4608 deep, 16 and 8 slices."""
    from tefuse.graph.weights import vector_lanes

    assert H100.splits(49, 512, 4608, 512, vector_lanes("float16")) == 16
    assert H100.splits(49, 512, 4608, 512, vector_lanes("int8")) == 8
    assert H100.splits(49, 512, 1536, 512, vector_lanes("int8")) == 1  # 768 counted: under min_total


def test_an_int8_product_summing_in_int8_is_left_whole():
    """Without out_dtype an int8 conv sums (and wraps) in int8, a sum split_sum does not take:
    it stays one kernel, as before one-byte products split."""
    b = GraphBuilder()
    x = b.input("x", (1, 7, 7, 512), "int8")
    w = b.input("w", (3, 3, 512, 512), "int8")
    g = b.build(b.conv2d(x, w, padding=1, layout="NHWC", name="conv"))
    assert conv_splits(g.node("conv"), H100) == 1 and split_k(g, H100) is g
    b = GraphBuilder()
    x = b.input("x", (1, 7, 7, 512), "int8")
    w = b.input("w", (3, 3, 512, 512), "int8")
    g = b.build(b.conv2d(x, w, padding=1, layout="NHWC", name="conv", out_dtype="int32"))
    assert conv_splits(g.node("conv"), H100) == 8
