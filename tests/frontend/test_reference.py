"""onnxruntime as the reference (tefuse/frontend/reference.py): a QDQ model runs as ONNX defines
it, its float ops between QuantizeLinear and DequantizeLinear, not on onnxruntime's integer
kernels (which saturate on CPUs without VNNI); other models keep onnxruntime's optimizations."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import numpy_helper

import tefuse
from tefuse.frontend.onnx import import_onnx
from tefuse.frontend.reference import has_qdq, onnxruntime_outputs, onnxruntime_session

ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnxruntime.quantization")
from tests.graph import test_qdq as Q  # noqa: E402 - onnxruntime first


def test_a_qdq_model_is_checked_against_its_onnx_semantics(tmp_path):
    rng = np.random.default_rng(0)
    m = Q._quantized(Q._mlp(rng), (4, 16), tmp_path, rng)
    assert has_qdq(m) and has_qdq(m.SerializeToString())
    opts = onnxruntime_session(m).get_session_options()
    assert opts.graph_optimization_level == ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    x = rng.standard_normal((4, 16)).astype(np.float32)
    want = onnxruntime_outputs(m, {"x": x})[0]
    np.testing.assert_array_equal(want, Q.onnx_semantics(m, x))
    y_scale = float(numpy_helper.to_array(next(i for i in m.graph.initializer if i.name == "y_scale")))
    assert np.abs(tefuse.build(import_onnx(m), "llvm").run(x)[0] - want).max() <= y_scale * 1.0001


def test_a_float_model_keeps_onnxruntimes_optimizations(tmp_path):
    m = Q._mlp(np.random.default_rng(0))
    path = tmp_path / "f.onnx"
    path.write_bytes(m.SerializeToString())
    assert not has_qdq(str(path))
    opts = onnxruntime_session(str(path)).get_session_options()
    assert opts.graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_ALL
