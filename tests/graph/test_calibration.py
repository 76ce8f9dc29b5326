"""The int8 calibration record and the QDQ pairs it inserts (graph/calibration.py)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tefuse.calibrate import calibrate
from tefuse.errors import GraphError
from tefuse.graph import GraphBuilder
from tefuse.graph.calibration import Calibration, insert_qdq, products, weight_scales
from tests.test_calibrate import _net, _samples


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


def _shortcut_net(broadcast: bool = False):
    """y = relu(conv0(x)) read by conv1 and by an add with conv1's output (a residual block), and
    an add of a per-channel constant (a bias: no shortcut)."""
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x = b.input("x", (1, 16, 6, 6))
    y = b.relu(b.conv2d(x, b.const(rng.standard_normal((16, 16, 3, 3)).astype("f4")), padding=1, name="conv0"))
    c1 = b.conv2d(y, b.const(rng.standard_normal((16, 16, 1, 1)).astype("f4")), name="conv1")
    out = b.add(c1, b.const(rng.standard_normal((1, 16, 1, 1)).astype("f4"))) if broadcast else b.add(c1, y)
    return b.build(out)


def test_a_residual_add_reads_its_shortcuts_codes_unless_asked_not_to():
    cal = Calibration("max", {"conv0": 2.0, "conv1": 3.0})
    (add,) = [n for n in insert_qdq(_shortcut_net(), cal).nodes if n.op == "add"]
    (dq,) = [i for i in add.inputs if i.op == "dequantize_linear"]
    (conv1,) = [n for n in insert_qdq(_shortcut_net(), cal).nodes if n.name == "conv1"]
    assert dq.inputs[0].op == "quantize_linear" and dq.inputs[1].value == conv1.inputs[0].inputs[1].value
    (add,) = [n for n in insert_qdq(_shortcut_net(), replace(cal, residuals=False)).nodes if n.op == "add"]
    assert "dequantize_linear" not in [i.op for i in add.inputs]
    (add,) = [n for n in insert_qdq(_shortcut_net(broadcast=True), cal).nodes if n.op == "add"]
    assert "dequantize_linear" not in [i.op for i in add.inputs]  # a bias is not a shortcut
