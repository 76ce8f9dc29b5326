"""Post-training int8 and fp8 calibration (tefuse/calibrate.py, graph/calibration.py) on llvm."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import tefuse
from tefuse.calibrate import calibrate, layer_errors, pin_worst
from tefuse.driver import prepare_graph
from tefuse.errors import GraphError
from tefuse.graph import GraphBuilder
from tefuse.graph.calibration import Calibration, insert_qdq


def _net(seed: int = 0):
    """stem-relu-conv-relu-conv-pool-dense: two convs and a dense to quantize (the 3-channel stem
    stays float: graph/calibration.MIN_CHANNELS)."""
    rng = np.random.default_rng(seed)
    b = GraphBuilder()
    x = b.input("x", (2, 3, 12, 12))
    y = b.relu(b.conv2d(x, b.const((rng.standard_normal((16, 3, 3, 3)) * 0.3).astype(np.float32), name="w0"),
                        padding=1, name="stem"))
    y = b.relu(b.conv2d(y, b.const((rng.standard_normal((16, 16, 3, 3)) * 0.1).astype(np.float32), name="w1"),
                        padding=1, name="conv1"))
    y = b.relu(b.conv2d(y, b.const((rng.standard_normal((16, 16, 3, 3)) * 0.1).astype(np.float32), name="w2"),
                        padding=1, strides=2, name="conv2"))
    y = b.op("reshape", b.op("global_avg_pool2d", y), shape=(2, 16))
    y = b.op("dense", y, b.const((rng.standard_normal((10, 16)) * 0.3).astype(np.float32), name="w3"), name="fc")
    return b.build(y)


def _samples(n: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    return [{"x": rng.standard_normal((2, 3, 12, 12)).astype(np.float32)} for _ in range(n)]


def downsample_net(seed: int = 0, shortcut_read_twice: bool = False, c: int = 16, hw: int = 8):
    """A ResNet downsampling block after a conv: body conv-ReLU-conv, shortcut a 1x1 conv (each
    conv with a bias), both of the block input y; relu(body + shortcut); 2 x c x hw x hw in,
    2c channels out. shortcut_read_twice: the shortcut is also a graph output (read outside the
    add)."""
    rng = np.random.default_rng(seed)

    def w(*shape):
        return b.const((rng.standard_normal(shape) * 0.2).astype(np.float32))

    b = GraphBuilder()
    x = b.input("x", (2, c, hw, hw))
    y = b.relu(b.conv2d(x, w(c, c, 3, 3), padding=1, name="conv0"))
    body = b.relu(b.op("bias_add", b.conv2d(y, w(c, c, 1, 1), name="conv1"), w(c), axis=1))
    body = b.op("bias_add", b.conv2d(body, w(2 * c, c, 1, 1), name="conv2"), w(2 * c), axis=1)
    short = b.op("bias_add", b.conv2d(y, w(2 * c, c, 1, 1), name="down"), w(2 * c), axis=1)
    out = b.relu(b.op("add", body, short, name="block"))
    return b.build([out, short] if shortcut_read_twice else [out])


def ds_samples(n: int, seed: int = 1, c: int = 16, hw: int = 8):
    rng = np.random.default_rng(seed)
    return [{"x": rng.standard_normal((2, c, hw, hw)).astype(np.float32)} for _ in range(n)]


def test_max_thresholds_are_the_largest_magnitudes_of_each_products_input():
    g = _net()
    samples = _samples(3)
    cal = calibrate(g, samples, "max")
    assert set(cal.thresholds) == {"conv1", "conv2", "fc"}  # not the stem
    for conv in ("conv1", "conv2"):
        probe = tefuse.Graph(list(g.inputs), [g.node(conv).inputs[0]])
        want = max(float(np.abs(tefuse.build(probe, "llvm").run(s)[0]).max()) for s in samples)
        assert cal.thresholds[conv] == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize("method", ["percentile", "entropy"])
def test_histogram_thresholds_clip_below_the_max(method):
    g, samples = _net(), _samples(4)
    top = calibrate(g, samples, "max").thresholds
    got = calibrate(g, samples, method, percentile=99.0).thresholds
    assert set(got) == set(top)
    assert all(0 < got[k] <= top[k] * 1.001 for k in got), (got, top)
    assert any(got[k] < top[k] * 0.99 for k in got), (got, top)


def test_int8_build_computes_the_products_on_int8_and_stays_close_to_float():
    g, samples = _net(), _samples(4)
    cal = calibrate(g, samples, "max")
    cg = tefuse.build(g, "llvm", precision="int8", calibration=cal)
    q = tefuse.build(insert_qdq(g, cal), "llvm")  # the same QDQ graph in float32 around the int8 products
    anchors = [k for k in cg.kernels if any(p.dtype == "int8" for p in k.params)]
    assert len(anchors) >= 3, [k.name for k in cg.kernels]
    ref = tefuse.build(g, "llvm")
    for s in _samples(3, seed=7):
        want = ref.run(s)[0]
        got = cg.run(s)[0]
        assert got.dtype == want.dtype
        assert np.abs(got - want).max() <= 0.05 * np.abs(want).max()
        np.testing.assert_allclose(got, q.run(s)[0], rtol=2e-2, atol=2e-2 * np.abs(want).max())


def test_fp8_build_computes_the_products_on_float8_codes_and_stays_close_to_float():
    """--precision fp8: every calibrated product on e4m3fn codes (scales threshold / 448), close
    to the QDQ graph computed in float32, within fp8's 3 mantissa bits of the float model."""
    g, samples = _net(), _samples(4)
    cal = calibrate(g, samples, "max")
    prepared = prepare_graph(g, "llvm", precision="fp8", calibration=cal)
    anchors = [n for n in prepared.nodes if n.is_op and n.attrs.get("codes")]
    assert sorted(n.op for n in anchors) == ["conv2d", "conv2d", "dense"]
    assert {n.attrs["codes"] for n in anchors} == {"float8_e4m3fn"}
    assert all(n.inputs[0].dtype == n.inputs[1].dtype == "uint8" for n in anchors)
    cg = tefuse.build(g, "llvm", precision="fp8", calibration=cal)
    q = tefuse.build(insert_qdq(g, cal, "fp8"), "llvm", qdq=False)  # dequantized, products in float32
    ref = tefuse.build(g, "llvm")
    for s in _samples(3, seed=7):
        want, got = ref.run(s)[0], cg.run(s)[0]
        assert np.abs(got - want).max() <= 0.1 * np.abs(want).max()
        # (the float part of the build is fp16: its quantize inputs round a little differently)
        np.testing.assert_allclose(got, q.run(s)[0], rtol=2e-2, atol=2e-2 * np.abs(want).max())


def test_fp8_layer_errors_are_measured_on_float8():
    g, samples = _net(), _samples(2)
    cal = calibrate(g, samples, "max")
    int8, fp8 = (sorted((e.product, e.relative) for e in layer_errors(g, cal, samples, p)) for p in ("int8", "fp8"))
    assert [p for p, _ in fp8] == ["conv1", "conv2", "fc"]
    assert all(0 < e < 0.2 for _, e in fp8) and [e for _, e in fp8] != [e for _, e in int8]


def test_layer_errors_rank_products_and_pin_the_worst():
    g, samples = _net(), _samples(2)
    cal = calibrate(g, samples, "max")
    errs = layer_errors(g, cal, samples)
    assert sorted(e.product for e in errs) == ["conv1", "conv2", "fc"]
    assert all(0 < e.relative < 0.1 for e in errs)
    assert [e.relative for e in errs] == sorted((e.relative for e in errs), reverse=True)
    pinned = pin_worst(cal, errs, limit=errs[1].relative)
    assert pinned.pinned == {errs[0].product}


def test_int8_without_a_calibration_or_with_unknown_products_is_refused():
    g = _net()
    with pytest.raises(GraphError, match="precision int8 needs a calibration"):
        tefuse.build(g, "llvm", precision="int8")
    with pytest.raises(GraphError, match="not in the graph"):
        tefuse.build(g, "llvm", precision="int8", calibration=Calibration("max", {"conv9": 1.0}))


def test_an_int8_artefact_keeps_its_calibration(tmp_path):
    g, samples = _net(), _samples(2)
    cal = calibrate(g, samples, "max", pin=["fc"])
    cg = tefuse.build(g, "llvm", precision="int8", calibration=cal)
    tefuse.save(cg, tmp_path / "net.tefuse")
    back = tefuse.load(tmp_path / "net.tefuse")
    assert back.calibration == cal
    np.testing.assert_array_equal(back.run(samples[0])[0], cg.run(samples[0])[0])


def test_a_projection_shortcut_gets_a_threshold_under_its_adds_name():
    g, samples = downsample_net(), ds_samples(3)
    cal = calibrate(g, samples, "max")
    assert set(cal.thresholds) == {"conv0", "conv1", "conv2", "down", "block"}
    probe = tefuse.build(tefuse.Graph(list(g.inputs), [g.node("block").inputs[1]]), "llvm")
    want = max(float(np.abs(probe.run(s)[0]).max()) for s in samples)
    assert cal.thresholds["block"] == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize("precision,code", [("int8", "int8"), ("fp8", "uint8")])
def test_a_projection_shortcuts_kernel_stores_codes_and_the_block_stays_close(precision, code):
    """The shortcut conv's kernel writes one-byte codes that the body's last conv reads in its
    epilogue: no float value crosses between the block's kernels, one kernel fewer bytes; the
    output equals the QDQ graph's computed in float32 (within the fp16 rounding of the rest)."""
    g, samples = downsample_net(), ds_samples(3)
    cal = calibrate(g, samples, "max")
    cg = tefuse.build(g, "llvm", precision=precision, calibration=cal)
    crossing = {o.dtype for k in cg.kernels for o in k.outputs
                if any(o is p for k2 in cg.kernels for p in k2.params)}
    assert crossing == {code}, crossing
    as_float = tefuse.build(g, "llvm", precision=precision, calibration=replace(cal, residuals=False))
    assert "float16" in {o.dtype for k in as_float.kernels for o in k.outputs
                         if any(o is p for k2 in as_float.kernels for p in k2.params)}
    q, ref = tefuse.build(insert_qdq(g, cal, precision), "llvm"), tefuse.build(g, "llvm")
    # close to float, and to the QDQ graph in float32 but where a half's rounding moved a code by
    # a step (an eighth of the value for e4m3: about one element in a hundred here)
    to_float, flips = (0.05, 0.0) if precision == "int8" else (0.1, 0.02)
    for s in samples:  # (inputs beyond the calibrated range saturate: the threshold's choice)
        want, got = ref.run(s)[0], cg.run(s)[0]
        assert np.abs(got - want).max() <= to_float * np.abs(want).max()
        assert np.mean(np.abs(got - q.run(s)[0]) > 2e-2 * np.abs(want).max()) <= flips
