"""onnxruntime as the numerical reference for ONNX models (`tefuse run --check`, the bench)."""
from __future__ import annotations

import numpy as np

from ..errors import TefuseError


def onnxruntime_session(model):
    """An onnxruntime (CPU) session of a model path or ModelProto, for runs on many feeds."""
    try:
        import onnxruntime as ort
    except ImportError as e:
        raise TefuseError("--check needs onnxruntime (pip install onnxruntime)") from e
    if not isinstance(model, (str, bytes)):
        model = model.SerializeToString()
    opts = ort.SessionOptions()
    opts.log_severity_level = 3  # errors only: a zoo model gives one warning per initializer listed as an input
    return ort.InferenceSession(model, sess_options=opts, providers=["CPUExecutionProvider"])


def onnxruntime_outputs(model, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """onnxruntime's (CPU) outputs for a model path or ModelProto."""
    sess = onnxruntime_session(model)
    names = {i.name for i in sess.get_inputs()}
    return sess.run(None, {k: v for k, v in feeds.items() if k in names})
