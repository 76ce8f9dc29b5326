"""CUDA's prologue rule: an elementwise prologue stays out of an fp16/bf16 GEMM that Hopper's
wgmma runs (its operands stream by cp.async), and stays fused everywhere else; the split graph
computes what the fused one does, and its GEMM takes wgmma."""
from __future__ import annotations

import numpy as np
import pytest

import tefuse
from tefuse.codegen.lower import lower_group
from tefuse.codegen.schedule import choose_schedule
from tefuse.driver import prepare_graph
from tefuse.fusion import fuse_graph
from tefuse.graph import GraphBuilder
from tefuse.schedules import prologue_policy
from tefuse.target import make_target

RNG = np.random.default_rng(0)


def _layernorm_linear(m=197, k=96, n=64):
    """LayerNorm (statistics, then the normalisation) feeding a Linear with bias and GELU, as in
    a transformer block; float32, so a precision pass decides the GEMM's dtype."""
    b = GraphBuilder()
    x = b.input("x", (1, m, k))
    d = b.sub(x, b.reduce_mean(x, axes=[-1], keepdims=True))
    var = b.reduce_mean(b.mul(d, d), axes=[-1], keepdims=True)
    y = b.div(d, b.sqrt(b.add(var, b.const(np.float32(1e-6)))))
    y = b.add(b.mul(y, b.const(RNG.standard_normal(k).astype("f4"))), b.const(RNG.standard_normal(k).astype("f4")))
    w = b.const((RNG.standard_normal((k, n)) / np.sqrt(k)).astype("f4"))
    return b.build(b.gelu(b.add(b.matmul(y, w), b.const(RNG.standard_normal(n).astype("f4")))))


def _groups(graph, target, precision="fp16"):
    tgt = make_target(target)
    return fuse_graph(prepare_graph(graph, tgt, precision=precision), prologue=prologue_policy(tgt))


def _gemm_group(groups):
    (g,) = [g for g in groups if g.anchor is not None and g.anchor.op == "matmul"]
    return g


@pytest.mark.parametrize("target,precision,fused", [
    ("cuda:sm_90", "fp16", False), ("cuda:sm_90a", "bf16", False),  # wgmma streams its operands
    ("cuda:sm_80", "fp16", True),  # mma.sync computes the prologue while loading tiles
    ("cuda:sm_90", "fp32", True),  # a float32 GEMM is no tensor-core GEMM
    ("llvm", "fp16", True),
])
def test_elementwise_prologue_kept_out_of_wgmma_gemms_only(target, precision, fused):
    groups = _groups(_layernorm_linear(), target, precision)
    gemm = _gemm_group(groups)
    ops = [n.op for n in gemm.prologue]
    assert ("add" in ops and "mul" in ops) == fused, [g.describe() for g in groups]
    if not fused:  # the normalisation is a kernel of its own, the GEMM keeps its epilogue
        assert [n.op for n in gemm.nodes][0] == "matmul" and "gelu" in [n.op for n in gemm.nodes]
        assert any({"mul", "add"} <= {n.op for n in g.nodes} and g.anchor is None for g in groups)


def test_injective_prologue_stays_fused_into_a_wgmma_gemm():
    """A reshape only moves the copy's indices: still read inside the GEMM's tile load."""
    b = GraphBuilder()
    x = b.input("x", (2, 98, 96), "float16")
    w = b.const((RNG.standard_normal((64, 96)) / 10).astype("float16"))
    g = b.build(b.op("matmul", b.reshape(x, shape=(196, 96)), w, trans_b=True))
    gemm = _gemm_group(fuse_graph(g, prologue=prologue_policy(make_target("cuda:sm_90"))))
    assert [n.op for n in gemm.prologue] == ["reshape"]


def test_the_split_gemm_runs_wgmma_untuned():
    groups = _groups(_layernorm_linear(), "cuda:sm_90")
    choice = choose_schedule(lower_group(_gemm_group(groups)), make_target("cuda:sm_90"), None)
    assert (choice.template.name, choice.config["intrin"]) == ("wgmma_gemm", "wgmma")


def test_split_and_fused_graphs_compute_the_same():
    """The rule only moves a kernel boundary: on llvm, prologue=False (every prologue its own
    kernel, as the rule does on Hopper) and the default agree with numpy's float32 answer."""
    graph = _layernorm_linear(m=37)
    x = RNG.standard_normal((1, 37, 96)).astype("f4")
    outs = [tefuse.build(graph, "llvm", prologue=p, precision="fp16").run(x=x)[0] for p in (True, False)]
    np.testing.assert_allclose(outs[0], outs[1], rtol=2e-3, atol=2e-3)
    ref = tefuse.build(graph, "llvm").run(x=x)[0]
    np.testing.assert_allclose(outs[1], ref, rtol=3e-2, atol=3e-2)


def test_an_images_channel_pad_is_a_kernel_of_its_own_before_a_wgmma_conv():
    """An fp16 model's first conv on Hopper: cast, layout change, the pad of its 3 channels to
    4 and the view of pixel pairs (graph/weights.pair_pixels) run as one injective kernel; the
    conv reads whole 16-byte pairs and takes wgmma."""
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x = b.input("x", (2, 3, 32, 32))
    w = b.const((rng.standard_normal((64, 3, 7, 7)) / 10).astype("f4"))
    groups = _groups(b.build(b.relu(b.conv2d(x, w, strides=2, padding=3))), "cuda:sm_90")
    assert [[n.op for n in g.nodes] for g in groups] == [["cast", "transpose", "pad", "reshape"],
                                                         ["conv2d", "relu", "cast", "transpose"]]
    choice = choose_schedule(lower_group(groups[1]), make_target("cuda:sm_90"), None)
    assert choice.config["intrin"] == "wgmma"


def test_a_channel_pad_alone_stays_out_of_a_wgmma_conv():
    """An fp16 NHWC image (no cast, no layout change before it): the pad of its 3 channels to 4
    computes nothing, yet read inside the conv's copy it would split the 16-byte vectors again, so
    the rule keeps it a kernel of its own on Hopper; other targets fuse it."""
    rng = np.random.default_rng(1)
    b = GraphBuilder()
    x = b.input("x", (2, 32, 32, 3), "float16")
    w = b.const((rng.standard_normal((7, 7, 3, 64)) / 10).astype("float16"))
    g = b.build(b.relu(b.conv2d(x, w, strides=2, padding=3, layout="NHWC")))
    for target, want in [("cuda:sm_90", [["pad", "reshape"], ["conv2d", "relu"]]), ("cuda:sm_80", [["conv2d", "relu"]])]:
        assert [[n.op for n in grp.nodes] for grp in _groups(g, target)] == want, target


@pytest.mark.parametrize("target,fused", [("cuda:sm_90", False), ("cuda:sm_80", False), ("llvm", True)])
def test_a_transpose_stays_out_of_a_row_norm_on_cuda(target, fused):
    """ConvNeXt's channels-last permute before its LayerNorm: read inside the norm, each thread
    of a row would read a channel plane apart, three times over; an embedding's gathers and adds
    still join (tests/fusion/test_fuse_ops.py)."""
    b = GraphBuilder()
    x = b.input("x", (1, 32, 7, 7))
    t = b.transpose(x, axes=[0, 2, 3, 1])
    y = b.layer_norm(t, b.const(np.ones(32, "f4")), b.const(np.zeros(32, "f4")), axis=-1)
    groups = _groups(b.build(y), target, "fp32")
    (norm,) = [g for g in groups if g.anchor is not None and g.anchor.op == "layer_norm"]
    assert any(n.op == "transpose" for n in norm.nodes) == fused
    assert len(groups) == (1 if fused else 2)


def test_slices_and_a_concat_stay_out_of_a_row_norm_on_cuda():
    """Swin's patch merging: four strided slices concatenated, then LayerNorm."""
    b = GraphBuilder()
    x = b.input("x", (1, 8, 8, 16))
    parts = [b.slice(x, starts=[0, i, j, 0], ends=[1, 8, 8, 16], axes=[0, 1, 2, 3], steps=[1, 2, 2, 1])
             for i, j in ((0, 0), (1, 0), (0, 1), (1, 1))]
    y = b.layer_norm(b.concat(*parts, axis=-1), b.const(np.ones(64, "f4")), b.const(np.zeros(64, "f4")), axis=-1)
    for target, fused in (("cuda:sm_90", False), ("llvm", True)):
        groups = _groups(b.build(y), target, "fp32")
        (norm,) = [g for g in groups if g.anchor is not None and g.anchor.op == "layer_norm"]
        assert any(n.op == "concat" for n in norm.nodes) == fused


def _residual_block_net(shape=(8, 32, 14, 14)):
    """conv-relu whose value is read by two 1x1 convs and a residual add (a residual block's
    output: the next block's conv, its downsample and its add), float32, for a calibrated
    int8/fp8 build; `shape`: the input's."""
    b = GraphBuilder()
    x = b.input("x", shape)
    y = b.relu(b.conv2d(x, b.const((RNG.standard_normal((64, shape[1], 3, 3)) / 20).astype("f4")), padding=1,
                        name="c0"))
    c1 = b.conv2d(y, b.const((RNG.standard_normal((64, 64, 1, 1)) / 8).astype("f4")), name="c1")
    c2 = b.conv2d(y, b.const((RNG.standard_normal((64, 64, 1, 1)) / 8).astype("f4")), name="c2")
    return b.build(b.add(b.add(b.relu(c1), c2), y))


@pytest.mark.parametrize("precision", ["int8", "fp8"])
@pytest.mark.parametrize("target,fused", [("cuda:sm_90", False), ("cuda:sm_80", True)])
def test_a_quantize_prologue_stays_out_of_one_byte_wgmma_convs(precision, target, fused):
    """An int8 / float8-code conv streams its codes by cp.async on wgmma too: the QuantizeLinear
    of its input (c0's, from the graph input) is its own kernel there, computed in the tile loads
    on mma.sync. c1 and c2 read one value at one scale: they share one QuantizeLinear, which c0's
    kernel writes beside the value the residual add reads in float (residuals=False: fusion's
    quantized outputs)."""
    from tefuse.graph.calibration import Calibration

    cal = Calibration("max", {"c0": 3.0, "c1": 4.0, "c2": 4.0}, residuals=False)
    tgt = make_target(target)
    groups = fuse_graph(prepare_graph(_residual_block_net(), tgt, precision=precision, calibration=cal),
                        prologue=prologue_policy(tgt))
    quantizes = [n for g in groups for n in g.nodes if n.op == "quantize_linear"]
    assert len(quantizes) == 2, [g.describe() for g in groups]
    (c0,) = [g for g in groups if g.anchor is not None and g.anchor.name.startswith("c0")]
    assert ("quantize_linear" in [n.op for n in c0.prologue]) == fused, [g.describe() for g in groups]
    assert [o.op for o in c0.outputs] == ["relu", "quantize_linear"], c0.describe()
    assert len(groups) == 4 - fused  # (c0's input quantize,) c0, c1, c2 + the add


@pytest.mark.parametrize("precision", ["int8", "fp8"])
def test_a_residual_add_reads_the_codes_so_the_block_output_is_stored_once(precision):
    """With quantized residuals (the default) the add reads c0's codes, dequantized in its own
    epilogue: c0's kernel stores the codes alone, one byte an element, and no kernel stores the
    float value; on llvm the build computes what one kernel an op does."""
    from tefuse.graph.calibration import Calibration

    cal = Calibration("max", {"c0": 3.0, "c1": 4.0, "c2": 4.0})
    tgt = make_target("cuda:sm_90")
    groups = fuse_graph(prepare_graph(_residual_block_net(), tgt, precision=precision, calibration=cal),
                        prologue=prologue_policy(tgt))
    (c0,) = [g for g in groups if g.anchor is not None and g.anchor.name.startswith("c0")]
    assert [o.op for o in c0.outputs] == ["quantize_linear"], c0.describe()
    # the residual add's kernel (a conv's epilogue) dequantizes the codes it reads
    (add,) = [g for g in groups if "dequantize_linear" in [n.op for n in g.nodes]]
    assert add.anchor is not None and add.anchor.op == "conv2d" and "add" in [n.op for n in add.nodes]
    g = _residual_block_net()
    x = RNG.standard_normal((8, 32, 14, 14)).astype(np.float32)
    fused = tefuse.build(g, "llvm", precision=precision, calibration=cal)
    alone = tefuse.build(g, "llvm", precision=precision, calibration=cal, fuse=False)
    assert not [k for k in fused.kernels if len(k.group.outputs) > 1]
    got, want = fused.run(x=x)[0], alone.run(x=x)[0]
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3 * float(np.abs(want).max()))
