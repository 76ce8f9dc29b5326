"""The whole-network bench on the CPU: a tiny stand-in for a torchvision export."""
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tefuse.bench import models

pytest.importorskip("onnxruntime")


def _fake_export(zero_head: bool):
    def export(name: str, batch: int, path: Path) -> Path:
        rng = np.random.default_rng(0)
        w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
        fc = np.zeros((10, 4), np.float32) if zero_head else rng.standard_normal((10, 4)).astype(np.float32)
        nodes = [helper.make_node("Conv", ["input", "w"], ["c"], strides=[4, 4], pads=[1, 1, 1, 1]),
                 helper.make_node("Relu", ["c"], ["r"]),
                 helper.make_node("GlobalAveragePool", ["r"], ["p"]),
                 helper.make_node("Flatten", ["p"], ["f"]),
                 helper.make_node("Gemm", ["f", "fc"], ["logits"], transB=1)]
        g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                                                           [batch, 3, 224, 224])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, 10])],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(fc, "fc")])
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
        return path
    return export


def test_bench_model_on_cpu_reports_its_slowest_kernels(tmp_path, monkeypatch):
    monkeypatch.setattr(models, "export_torchvision", _fake_export(zero_head=False))
    r = models.bench_model("tiny", 2, "llvm", tmp_path, db=None, jobs=2)
    assert r.ok and r.kernels >= 2 and r.onnx_nodes == 5 and r.peer_ms is None
    assert len(r.slowest) == r.kernels
    assert [t for _, _, t, _ in r.slowest] == sorted((t for _, _, t, _ in r.slowest), reverse=True)
    assert abs(sum(t for _, _, t, _ in r.slowest) - r.tefuse_kernel_ms) < 1e-3 * r.kernels
    assert "tiny b2 llvm" in models.result_line(r)


def test_an_all_zero_reference_fails_the_check(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(models, "export_torchvision", _fake_export(zero_head=True))
    r = models.bench_model("zeros", 1, "llvm", tmp_path, db=None, jobs=1)
    assert r.max_abs_err == 0 and not r.ok
    assert any("proves nothing" in m for m in caplog.messages)
