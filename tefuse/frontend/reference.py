"""onnxruntime as the numerical reference for ONNX models (`tefuse run --check`, the bench)."""
from __future__ import annotations

import numpy as np

from ..errors import TefuseError


QDQ_OPS = ("QuantizeLinear", "DequantizeLinear")


def has_qdq(model) -> bool:
    """Whether a model path, serialized model or ModelProto holds QuantizeLinear/DequantizeLinear."""
    import onnx

    if isinstance(model, bytes):
        model = onnx.load_from_string(model)
    elif not isinstance(model, onnx.ModelProto):
        model = onnx.load(model, load_external_data=False)
    return any(n.op_type in QDQ_OPS for n in model.graph.node)


def onnxruntime_session(model):
    """An onnxruntime (CPU) session of a model path or ModelProto, for runs on many feeds. A QDQ
    model runs unoptimized, its float ops between QuantizeLinear and DequantizeLinear as ONNX
    defines them: optimized, onnxruntime runs such chains on integer kernels of its own, which
    on x86 CPUs without VNNI saturate 16-bit pair sums (outputs many quantization steps off)."""
    try:
        import onnxruntime as ort
    except ImportError as e:
        raise TefuseError("--check needs onnxruntime (pip install onnxruntime)") from e
    qdq = has_qdq(model)
    if not isinstance(model, (str, bytes)):
        model = model.SerializeToString()
    opts = ort.SessionOptions()
    opts.log_severity_level = 3  # errors only: a zoo model gives one warning per initializer listed as an input
    if qdq:
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model, sess_options=opts, providers=["CPUExecutionProvider"])


def onnxruntime_outputs(model, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """onnxruntime's (CPU) outputs for a model path or ModelProto."""
    sess = onnxruntime_session(model)
    names = {i.name for i in sess.get_inputs()}
    return sess.run(None, {k: v for k, v in feeds.items() if k in names})
