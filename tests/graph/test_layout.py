"""Layout conversion (graph/layout.py): NCHW graphs computed channels-last match the NCHW
build, every layout change fuses into a neighbouring kernel, and on CUDA an fp16 conv chain
from an NCHW graph becomes one NHWC tensor-core kernel."""
from __future__ import annotations

import os

import numpy as np
import pytest

import tefuse
from tefuse.errors import GraphError
from tefuse.fusion import fuse_graph
from tefuse.graph import GraphBuilder
from tefuse.graph.layout import convert_layout


def _resnet_block(rng, residual_from_input=False):
    """conv+bias+BN+relu -> conv+bias+BN -> add residual -> relu -> max_pool -> conv ->
    global_avg_pool -> flatten -> dense -> softmax."""
    b = GraphBuilder()
    x = b.input("x", (2, 16, 12, 12))

    def c(shape, s=0.1):
        return b.const(rng.standard_normal(shape).astype("float32") * s)

    def bn(y, ch):
        var = b.const((1 + np.abs(rng.standard_normal(ch)) * 0.1).astype("float32"))
        return b.batch_norm(y, c(ch), c(ch), c(ch), var)

    y1 = b.relu(bn(b.bias_add(b.conv2d(x, c((16, 16, 3, 3)), padding=1), c(16)), 16))
    y = bn(b.bias_add(b.conv2d(y1, c((16, 16, 3, 3)), padding=1), c(16)), 16)
    y = b.relu(b.add(y, x if residual_from_input else y1))
    y = b.max_pool2d(y, kernel=2, strides=2)
    y = b.conv2d(y, c((32, 16, 1, 1)))
    y = b.flatten(b.global_avg_pool2d(y))
    y = b.softmax(b.dense(y, c((10, 32))), axis=-1)
    return b.build(y)


def _close(got, want, precision):
    scale = np.abs(want).max()
    tol = 1e-5 if precision == "fp32" else 4e-3
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.abs(got - want).max() <= tol * scale, np.abs(got - want).max() / scale


@pytest.mark.parametrize("residual_from_input", [False, True], ids=["residual", "input_residual"])
@pytest.mark.parametrize("precision", ["fp32", "fp16"])
def test_resnet_block_nhwc_matches_nchw(precision, residual_from_input):
    rng = np.random.default_rng(0)
    g = _resnet_block(rng, residual_from_input)
    x = rng.standard_normal((2, 16, 12, 12)).astype("float32")
    want = tefuse.build(g, "llvm").run(x)[0]
    got = tefuse.build(g, "llvm", precision=precision, layout="NHWC").run(x)[0]
    _close(got, want, precision)


@pytest.mark.parametrize("residual_from_input", [False, True], ids=["residual", "input_residual"])
def test_resnet_block_kernels_no_standalone_transpose(residual_from_input):
    g = _resnet_block(np.random.default_rng(0), residual_from_input)
    h = convert_layout(g, "NHWC")
    convs = [n for n in h.nodes if n.op == "conv2d"]
    assert convs and all(n.attrs["layout"] == "NHWC" for n in convs)
    assert all(n.inputs[1].op == "constant" and n.inputs[1].shape[3] == n.shape[3] for n in convs)  # HWIO
    transposes = [n for n in h.nodes if n.op == "transpose"]
    # one after the input per reader (the first conv, and the add when the residual is the
    # input); none before flatten: a global pool's N,C,1,1 lists its elements alike in NHWC
    assert all(t.inputs[0].op == "input" and t.attrs["axes"] == (0, 2, 3, 1) for t in transposes)
    assert len(transposes) <= (2 if residual_from_input else 1)
    before, after = fuse_graph(g), fuse_graph(h)
    assert len(after) <= len(before) == 7
    assert not [k for k in after if all(n.op == "transpose" for n in k.nodes)]
    assert all(t in k.nodes for t in transposes for k in after if t in k.nodes)
    cg = tefuse.build(g, "llvm", layout="NHWC")
    assert cg.num_kernels == len(after)
    assert not [k for k in cg.kernels if all(n.op == "transpose" for n in k.group.nodes)]



def _convnext_block(rng, nhwc_input=False):
    """A ConvNeXt block as torchvision exports it: depthwise 7x7 conv (NCHW) -> permute to
    channels-last -> LayerNorm over C -> Linear -> GELU -> Linear -> permute back -> layer scale
    -> residual add -> a 1x1 conv. With `nhwc_input` the graph input is NHWC and permuted first,
    as TensorFlow exports are."""
    b = GraphBuilder()
    shape = (2, 7, 7, 16) if nhwc_input else (2, 16, 7, 7)
    x = b.input("x", shape)
    x = b.transpose(x, axes=(0, 3, 1, 2)) if nhwc_input else x

    def c(shape, s=0.2):
        return b.const(rng.standard_normal(shape).astype("float32") * s)

    y = b.bias_add(b.conv2d(x, c((16, 1, 7, 7)), padding=3, groups=16), c(16))
    y = b.transpose(y, axes=(0, 2, 3, 1))
    y = b.layer_norm(y, b.const(np.ones(16, "float32")), c(16), axis=-1)
    y = b.gelu(b.add(b.matmul(y, c((16, 32))), c(32)))
    y = b.add(b.matmul(y, c((32, 16))), c(16))
    y = b.mul(b.transpose(y, axes=(0, 3, 1, 2)), c((16, 1, 1)))
    y = b.add(y, x)
    return b.build(b.conv2d(y, c((8, 16, 1, 1))))


@pytest.mark.parametrize("nhwc_input", [False, True], ids=["nchw_input", "nhwc_input"])
def test_models_own_permutes_become_identities(nhwc_input):
    rng = np.random.default_rng(3)
    g = _convnext_block(rng, nhwc_input)
    h = convert_layout(g, "NHWC")
    assert all(n.attrs["layout"] == "NHWC" for n in h.nodes if n.op == "conv2d")
    # the model's permutes name what the layout already stores: none is left but the graph
    # input's (an NCHW input, one per reader) and the output's transpose back
    transposes = [n for n in h.nodes if n.op == "transpose"]
    assert [t for t in transposes if t.inputs[0].op != "input"] == list(h.outputs)
    assert len(transposes) == (1 if nhwc_input else 3), [(t.name, t.attrs["axes"]) for t in transposes]
    for k in fuse_graph(h):  # the depthwise conv writes NHWC: no transpose in its epilogue
        assert all(t.inputs[0].op == "input" or t in h.outputs for t in k.nodes if t.op == "transpose")
    x = rng.standard_normal(g.inputs[0].shape).astype("float32")
    want = tefuse.build(g, "llvm").run(x)[0]
    got = tefuse.build(g, "llvm", layout="NHWC").run(x)[0]  # fp16 NHWC: the ResNet block's test
    _close(got, want, "fp32")

def test_constants_outputs_and_fallbacks():
    """Per-channel [C,1,1] constants are converted, weights become HWIO once under their own
    name, outputs keep names and NCHW shapes, and a reshape of a 4-D value reads NCHW."""
    rng = np.random.default_rng(1)
    b = GraphBuilder()
    x = b.input("x", (1, 8, 6, 6))
    w = rng.standard_normal((8, 8, 3, 3)).astype("float32")
    y = b.conv2d(x, b.const(w, name="w"), padding=1)
    y = b.mul(y, b.const(rng.standard_normal((8, 1, 1)).astype("float32"), name="scale"))
    y = b.add(y, b.const(np.float32(0.5), name="half"))
    y = b.conv2d(b.sigmoid(y), b.const(w, name="w2"), padding=1, name="out")
    r = b.reshape(y, shape=(1, -1), name="flat")
    g = b.build([y, r])
    h = convert_layout(g, "NHWC")
    assert [o.name for o in h.outputs] == ["out", "flat"]
    assert [o.shape for o in h.outputs] == [(1, 8, 6, 6), (1, 288)]
    consts = {n.name: n for n in h.nodes if n.op == "constant"}
    np.testing.assert_array_equal(consts["w"].value, w.transpose(2, 3, 1, 0))
    assert consts["scale_nhwc"].shape == (1, 1, 1, 8) and consts["half"].shape == ()
    (flat,) = [n for n in h.nodes if n.name == "flat"]
    assert flat.inputs[0].op == "transpose" and flat.inputs[0].attrs["axes"] == (0, 3, 1, 2)
    x_ = rng.standard_normal((1, 8, 6, 6)).astype("float32")
    for got, want in zip(tefuse.build(h, "llvm").run(x_), tefuse.build(g, "llvm").run(x_)):
        _close(got, want, "fp32")
    groups = fuse_graph(h)
    assert len(groups) == len(fuse_graph(g))
    assert not [k for k in groups if all(n.op == "transpose" for n in k.nodes)]


def test_no_conv_or_nchw_layout_leaves_graph_alone_and_bad_layout_is_refused():
    b = GraphBuilder()
    x = b.input("x", (2, 8))
    g = b.build(b.relu(x))
    assert convert_layout(g, "NHWC") is g
    g2 = _resnet_block(np.random.default_rng(0))
    assert convert_layout(g2, "NCHW") is g2 and convert_layout(g2, None) is g2
    with pytest.raises(GraphError, match="unknown layout"):
        convert_layout(g2, "NCWH")


def test_auto_layout_is_off_for_fp32_and_cpu():
    g = _resnet_block(np.random.default_rng(0))
    for kw in ({}, {"precision": "fp16"}):
        cg = tefuse.build(g, "llvm", **kw)
        assert all(n.attrs["layout"] == "NCHW" for n in cg.graph.nodes if n.op == "conv2d")
        assert not [n for n in cg.graph.nodes if n.op == "transpose"]


def test_squeezenet_nhwc_matches_nchw():
    onnx = pytest.importorskip("onnx")
    from tefuse.frontend.onnx import import_onnx
    from tests.frontend.test_onnx_zoo import model_path, randomized, real_inputs

    model = randomized(onnx.load(model_path("squeezenet")))
    (vi,) = real_inputs(model)
    shape = tuple(d.dim_value or 1 for d in vi.type.tensor_type.shape.dim)
    x = np.random.default_rng(0).standard_normal(shape).astype("float32")
    g = import_onnx(model)
    want = tefuse.build(g, "llvm").run(x)[0]
    h = convert_layout(g, "NHWC")
    assert all(n.attrs["layout"] == "NHWC" for n in h.nodes if n.op == "conv2d")
    assert len(fuse_graph(h)) <= len(fuse_graph(g))
    got = tefuse.build(g, "llvm", layout="NHWC").run(x)[0]  # fp16 NHWC: the ResNet block's test
    _close(got, want, "fp32")


def test_cuda_fp16_conv_chain_is_one_nhwc_tensor_core_kernel():
    """No GPU needed: the CUDA source is generated (nvcc compiles it)."""
    import shutil

    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not on PATH")
    from tefuse.plan.spec import parse_chain

    g = parse_chain("conv2d(k=32,r=3,pad=1)+bias+batch_norm+relu", (2, 16, 8, 8), "float32", "NCHW")
    cg = tefuse.build(g, "cuda", precision="fp16")  # layout None: auto, NHWC on CUDA fp16
    (k,) = cg.kernels
    assert k.template == "tensorcore_gemm"
    (conv,) = [n for n in k.group.nodes if n.op == "conv2d"]
    assert conv.attrs["layout"] == "NHWC"
    assert [o.shape for o in cg.graph.outputs] == [g.outputs[0].shape]
    assert [o.name for o in cg.graph.outputs] == [g.outputs[0].name]


def test_a_pad_between_convs_is_computed_channels_last():
    """An explicit pad (a QDQ conv's data padded with its zero point, a TensorFlow export's Pad)
    of an NHWC-held value pads in NHWC: no transpose to NCHW and back around it."""
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x = b.input("x", (2, 8, 10, 10))
    y = b.relu(b.conv2d(x, b.const(rng.standard_normal((8, 8, 1, 1)).astype(np.float32), name="w1")))
    y = b.op("pad", y, pads=(0, 0, 1, 2, 0, 0, 1, 0), value=-0.5)
    y = b.conv2d(y, b.const(rng.standard_normal((4, 8, 3, 3)).astype(np.float32), name="w2"))
    g = b.build(y)
    nhwc = convert_layout(g, "NHWC")
    pad = next(n for n in nhwc.nodes if n.op == "pad")
    assert pad.attrs["pads"] == (0, 1, 2, 0, 0, 1, 0, 0) and pad.inputs[0].op != "transpose"
    assert sum(n.op == "transpose" for n in nhwc.nodes) == 2  # the input's and the output's only
    xv = rng.standard_normal((2, 8, 10, 10)).astype(np.float32)
    np.testing.assert_allclose(tefuse.build(nhwc, "llvm").run(x=xv)[0], tefuse.build(g, "llvm").run(x=xv)[0],
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("per_channel", [True, False])
def test_a_qlinear_convs_per_channel_requantize_moves_its_axis_to_nhwc(per_channel):
    """QLinearConv's requantize takes a multiplier per output channel along axis 1: in NHWC its
    axis is 3 and the multiplier stays 1-D (read as a broadcast [1, 1, K, 1] it was refused);
    the result equals onnxruntime's, bit for bit."""
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper, numpy_helper

    from tefuse.frontend.onnx import import_onnx

    rng = np.random.default_rng(0)
    c = k = 16
    w_s = rng.random(k).astype(np.float32) * 0.01 + 0.001 if per_channel else np.array(0.01, np.float32)
    w_zp = np.zeros(k, np.int8) if per_channel else np.array(0, np.int8)
    inits = [numpy_helper.from_array(v, n) for n, v in [
        ("x_s", np.array(0.05, np.float32)), ("x_zp", np.array(0, np.int8)),
        ("w", rng.integers(-20, 20, (k, c, 3, 3)).astype(np.int8)), ("w_s", w_s), ("w_zp", w_zp),
        ("y_s", np.array(0.1, np.float32)), ("y_zp", np.array(3, np.int8))]]
    node = helper.make_node("QLinearConv", ["x", "x_s", "x_zp", "w", "w_s", "w_zp", "y_s", "y_zp"], ["y"],
                            pads=[1, 1, 1, 1])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.INT8, [2, c, 6, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.INT8, [2, k, 6, 6])], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    x = rng.integers(-100, 100, (2, c, 6, 6)).astype(np.int8)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    cg = tefuse.build(import_onnx(model), "llvm", layout="NHWC", cache=None)
    if per_channel:
        assert [n.attrs["axis"] for n in cg.graph.nodes if n.op == "requantize"] == [3]
    np.testing.assert_array_equal(cg.run(x=x)[0], want)


def _qdq_between_convs(kind: str, rng):
    """conv -> QuantizeLinear -> DequantizeLinear -> conv (NCHW, axis 1) with the parameters of
    `kind`, and the run's inputs."""
    b = GraphBuilder()
    x = b.input("x", (2, 8, 6, 6))
    feeds = {"x": rng.standard_normal((2, 8, 6, 6)).astype(np.float32)}
    y = b.conv2d(x, b.const((rng.standard_normal((8, 8, 3, 3)) * 0.2).astype(np.float32)), padding=1)
    kw = {}
    if kind == "constant":
        s, z = b.const(np.full((1, 1, 1, 1), 0.05, np.float32)), b.const(np.zeros((1, 1, 1, 1), np.int8))
    elif kind == "per_channel":
        s, z = b.const(rng.uniform(0.02, 0.08, 8).astype(np.float32)), b.const(np.array([0], np.int8))
    elif kind == "run_time":  # a scale fed at run time (dynamic quantization)
        s, z = b.input("s", (1,)), b.const(np.array([0], np.int8))
        feeds["s"] = np.array([0.05], np.float32)
    else:  # blocked: 2 channels a scale, along axis 1
        s = b.const(rng.uniform(0.02, 0.08, (2, 4, 6, 6)).astype(np.float32))
        z, kw = b.const(np.zeros((2, 4, 6, 6), np.int8)), {"block_size": 2}
    d = b.dequantize_linear(b.quantize_linear(y, s, z, dtype="int8", axis=1, **kw), s, z, axis=1, **kw)
    return b.build(b.conv2d(d, b.const((rng.standard_normal((8, 8, 3, 3)) * 0.2).astype(np.float32)), padding=1)), feeds


@pytest.mark.parametrize("kind,axis,transposes", [
    ("constant", 1, 2), ("run_time", 1, 2), ("per_channel", 3, 2), ("blocked", 1, 4)])
def test_a_quantize_between_nhwc_convs_moves_only_an_axis_its_parameters_run_along(kind, axis, transposes):
    """Per-tensor parameters (one value each, a constant or a run-time input) leave the axis as
    imported, since it is part of the kernels' workload keys the shipped tuning logs are found
    by, and the QDQ pair stays channels-last (only the graph input's and output's transposes);
    per-channel ones move it to 3; a blocked pair, its scale laid out along the imported axes,
    is computed NCHW between transposes. Each equals the NCHW build."""
    rng = np.random.default_rng(0)
    g, feeds = _qdq_between_convs(kind, rng)
    nhwc = convert_layout(g, "NHWC")
    assert [n.attrs["axis"] for n in nhwc.nodes if n.op.endswith("quantize_linear")] == [axis, axis]
    assert sum(n.op == "transpose" for n in nhwc.nodes) == transposes
    np.testing.assert_allclose(tefuse.build(nhwc, "llvm", cache=None).run(**feeds)[0],
                               tefuse.build(g, "llvm", cache=None).run(**feeds)[0], rtol=1e-4, atol=1e-4)
