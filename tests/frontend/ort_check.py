"""One check the converter tests share: import, build for llvm, run, and compare every output with
onnxruntime's (dtype, shape, values)."""
from __future__ import annotations

import numpy as np
import onnx

import tefuse
from tefuse.frontend.onnx import import_onnx


def matches_onnxruntime(m: onnx.ModelProto, feeds: dict, rtol=1e-5, atol=1e-6, exact=False, **import_args):
    """The imported graph and its build, once every output equals onnxruntime's."""
    import onnxruntime as ort

    graph = import_onnx(m, **import_args)
    cg = tefuse.build(graph, "llvm")
    got = cg.run(**feeds)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
        if exact:
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol)
    return graph, cg
