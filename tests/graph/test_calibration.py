"""The int8 calibration record and the QDQ pairs it inserts (graph/calibration.py)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tefuse.calibrate import calibrate
from tefuse.errors import GraphError
from tefuse.graph import GraphBuilder
from tefuse.graph.calibration import Calibration, insert_qdq, products, projection_shortcuts, weight_scales
from tests.test_calibrate import _net, _samples, downsample_net


def test_pinned_products_stay_float():
    g, samples = _net(), _samples(2)
    cal = calibrate(g, samples, "max", pin=["conv1"])
    qg = insert_qdq(g, cal)
    assert [n.name for n in products(qg)] == ["conv1"]  # the others now read dequantized int8 values
    assert qg.node("conv1").inputs[0].op == "relu"  # the stem's, not a dequantize_linear


def test_a_calibration_round_trips_through_json_and_bad_ones_are_one_line():
    cal = Calibration("entropy", {"conv1": 1.5, "fc": 3.0}, frozenset({"fc"}))
    assert Calibration.from_json(cal.to_json()) == cal
    float_residuals = Calibration("max", {"conv1": 1.5}, residuals=False)
    assert Calibration.from_json(float_residuals.to_json()) == float_residuals
    assert Calibration.from_json('{"method": "max", "thresholds": {}}').residuals  # saved before the field
    with pytest.raises(GraphError, match="scales.json: not a calibration"):
        Calibration.from_json("{}", "scales.json")
    with pytest.raises(GraphError, match="calibration method"):
        Calibration("minmax", {})


def test_weight_scales_are_per_output_channel_and_symmetric():
    w = np.array([[0.5, -1.0], [0.0, 0.0], [2.54, 1.27]], np.float32)
    q, s = weight_scales(w, 0, (1,))
    np.testing.assert_allclose(s, [1.0 / 127, 1.0, 2.54 / 127], rtol=1e-6)
    np.testing.assert_array_equal(q, [[64, -127], [0, 0], [127, 64]])  # 63.5 rounds half to even: 64


def test_a_conv_over_fewer_channels_than_a_copy_of_codes_stays_float():
    """The stem (3 channels) is no quantizable product: calibration skips it and insert_qdq
    leaves it reading the float input, whatever threshold it is given."""
    g = _net()
    assert "stem" not in [n.name for n in products(g)]
    qg = insert_qdq(g, Calibration("max", {"stem": 2.0, "conv1": 2.0}))
    assert qg.node("stem").inputs[0].op == "input"
    assert qg.node("conv1").inputs[0].op == "dequantize_linear"


def _shortcut_net(kind: str = "residual", conv_first: bool = True):
    """y = relu(conv0(x)), read by conv1. kind: "residual" adds conv1's output to y (a residual
    block); "broadcast" adds y to conv1's output pooled to one pixel a channel (a broadcast
    operand, not a shortcut); "unrelated" adds y to a value conv1 does not feed; "chained" also
    outputs a second add of y's residual (add(residual, y): both read y)."""
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x = b.input("x", (1, 16, 6, 6))
    y = b.relu(b.conv2d(x, b.const(rng.standard_normal((16, 16, 3, 3)).astype("f4")), padding=1, name="conv0"))
    c1 = b.conv2d(y, b.const(rng.standard_normal((16, 16, 1, 1)).astype("f4")), name="conv1")
    if kind == "residual":
        out = b.add(c1, y)
    elif kind == "broadcast":
        out = b.add(b.global_avg_pool2d(c1), y)
    else:
        out = b.add(y, b.sigmoid(x))
    return b.build([c1, out] if conv_first else [out, c1])


def _add_reads(graph, cal):
    (add,) = [n for n in insert_qdq(graph, cal).nodes if n.op == "add"]
    return [i.op for i in add.inputs]


def test_a_residual_add_reads_its_shortcuts_codes_unless_asked_not_to():
    cal = Calibration("max", {"conv0": 2.0, "conv1": 3.0})
    g = insert_qdq(_shortcut_net(), cal)
    (add,) = [n for n in g.nodes if n.op == "add"]
    (dq,) = [i for i in add.inputs if i.op == "dequantize_linear"]
    (conv1,) = [n for n in g.nodes if n.name == "conv1"]
    assert conv1.inputs[0] is dq and dq.inputs[0].op == "quantize_linear"  # the conv's own codes
    # whatever the graph's order: the block's conv comes before its add
    assert "dequantize_linear" in _add_reads(_shortcut_net(conv_first=False), cal)
    assert "dequantize_linear" not in _add_reads(_shortcut_net(), replace(cal, residuals=False))


@pytest.mark.parametrize("kind", ["broadcast", "unrelated"])
def test_an_add_that_is_not_a_residual_block_reads_the_float_value(kind):
    """A broadcast operand is not a shortcut; nor is a quantized value added to something its
    conv does not feed (a transformer's add after a LayerNorm whose output a Linear reads)."""
    cal = Calibration("max", {"conv0": 2.0, "conv1": 3.0})
    for conv_first in (True, False):
        assert "dequantize_linear" not in _add_reads(_shortcut_net(kind, conv_first), cal)


def test_a_downsampling_blocks_shortcut_conv_is_its_projection_shortcut():
    """The add's second operand: the 1x1 conv (and its bias) of the block input the body's first
    conv reads. Not where the shortcut is read elsewhere too (its float value is stored anyway),
    nor an identity shortcut (quantized as the conv's input codes instead)."""
    assert projection_shortcuts(downsample_net()) == {"block": 1}
    assert projection_shortcuts(downsample_net(shortcut_read_twice=True)) == {}
    assert projection_shortcuts(_shortcut_net()) == {}


def test_a_projection_shortcut_is_quantized_with_its_adds_threshold():
    thresholds = {"conv0": 2.0, "conv1": 2.0, "conv2": 2.0, "down": 2.0, "block": 4.0}
    g = insert_qdq(downsample_net(), Calibration("max", thresholds))
    dq = g.node("block").inputs[1]
    assert dq.op == "dequantize_linear" and dq.inputs[0].op == "quantize_linear"
    assert dq.inputs[0].inputs[0].op == "bias_add" and float(dq.inputs[1].value) == pytest.approx(4.0 / 127)
    for cal in (Calibration("max", {k: v for k, v in thresholds.items() if k != "block"}),  # saved before
                Calibration("max", thresholds, frozenset({"block"})),
                Calibration("max", thresholds, frozenset({"down"})),  # its conv pinned: float out
                Calibration("max", thresholds, residuals=False)):
        assert insert_qdq(downsample_net(), cal).node("block").inputs[1].op == "bias_add"
