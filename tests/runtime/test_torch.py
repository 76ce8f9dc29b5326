"""Real torch (CPU) tensors through the executor: torch in, torch out, checked against onnxruntime
and numpy; what is zero-copy is checked by data pointer.

Zero-copy, as measured here: a contiguous torch input whose data is 64-byte aligned (what torch's
allocator gives) is bound by the executor at torch's own address; a sliced or transposed one is
copied once (TVM takes only aligned, compact data). Outputs are new TVM buffers each run, handed to
torch through DLPack (torch's tensor is that buffer). An out= torch buffer is written in place.

CI installs torch (`.ci/run`, TEFUSE_REQUIRE_TORCH=1): there a missing torch fails these tests
instead of skipping them; tests/runtime/test_executor.py's fake DLPack framework runs everywhere.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
import tvm

import tefuse
from tefuse.runtime import to_device

if os.environ.get("TEFUSE_REQUIRE_TORCH"):
    import torch
else:
    torch = pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")


def _ptr(t: tvm.runtime.Tensor) -> int:
    return np.from_dlpack(t).ctypes.data


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    from tests.commands.models import dynamic_mlp

    path = dynamic_mlp(tmp_path_factory.mktemp("torch") / "mlp.onnx")
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return path, lambda x: sess.run(None, {"x": x})[0]


def test_torch_in_torch_out_matches_onnxruntime(mlp):
    path, reference = mlp
    cg = tefuse.build(tefuse.import_onnx(path, input_shapes={"x": (4, 6)}), "llvm")
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(0))
    (y,) = cg.run({"x": x})
    assert isinstance(y, torch.Tensor) and y.device.type == "cpu" and y.dtype == torch.float32
    assert tuple(y.shape) == (4, 3)
    np.testing.assert_allclose(y.numpy(), reference(x.numpy()), rtol=1e-5, atol=1e-6)
    (again,) = cg.run(x=x)
    assert again.data_ptr() != y.data_ptr()  # new tensors each run: the first is kept intact
    np.testing.assert_allclose(y.numpy(), reference(x.numpy()), rtol=1e-5, atol=1e-6)
    assert isinstance(cg.run(x, as_numpy=True)[0], np.ndarray)


def test_a_contiguous_input_is_bound_without_a_copy(mlp):
    path, _ = mlp
    cg = tefuse.build(tefuse.import_onnx(path, input_shapes={"x": (4, 6)}), "llvm")
    x = torch.randn(4, 6)
    assert x.data_ptr() % 64 == 0  # torch's CPU allocator aligns to 64 bytes, as TVM needs
    (bound,) = cg.bind_inputs((), {"x": x}).values()
    assert _ptr(bound) == x.data_ptr()
    x.mul_(2)  # so a change to the torch tensor is what the executor reads
    np.testing.assert_array_equal(np.from_dlpack(bound), x.numpy())


def test_sliced_and_transposed_inputs_are_copied_and_still_right(rng):
    b = tefuse.GraphBuilder()
    cg = tefuse.build(b.build(b.relu(b.input("x", (3, 4)))), "llvm")
    base = torch.randn(4, 4)
    sliced = base[1:]  # 16 bytes past an aligned start
    (t,) = cg.bind_inputs((), {"x": sliced}).values()
    assert _ptr(t) != sliced.data_ptr()
    torch.testing.assert_close(cg.run(x=sliced)[0], torch.relu(sliced))
    wide = torch.randn(4, 3)
    torch.testing.assert_close(cg.run(x=wide.t())[0], torch.relu(wide.t()))


def test_out_buffers_are_written_in_place(mlp, monkeypatch):
    path, reference = mlp
    cg = tefuse.build(tefuse.import_onnx(path, input_shapes={"x": (2, 6)}), "llvm")
    x = torch.randn(2, 6)
    buf = torch.full((2, 3), float("nan"))
    ptr = buf.data_ptr()
    monkeypatch.setattr(cg, "_copy_into", lambda *a: pytest.fail("out= buffer copied into, not written in place"))
    (same,) = cg.run({"x": x}, out=[buf])
    assert same is buf and buf.data_ptr() == ptr
    np.testing.assert_allclose(buf.numpy(), reference(x.numpy()), rtol=1e-5, atol=1e-6)


def test_a_tensor_that_requires_grad_runs_as_inference():
    b = tefuse.GraphBuilder()
    cg = tefuse.build(b.build(b.relu(b.input("x", (2, 5)))), "llvm")
    x = torch.randn(2, 5, requires_grad=True)
    (y,) = cg.run(x=x)
    torch.testing.assert_close(y, torch.relu(x.detach()))
    assert not y.requires_grad


def test_a_profiled_graph_dispatches_on_torch_shapes(mlp):
    path, reference = mlp
    pg = tefuse.build(tefuse.import_onnx_profiles(path, [1, 4]), "llvm")
    for n in (1, 4):
        x = torch.randn(n, 6)
        (y,) = pg.run(x=x)
        assert isinstance(y, torch.Tensor) and tuple(y.shape) == (n, 3)
        np.testing.assert_allclose(y.numpy(), reference(x.numpy()), rtol=1e-5, atol=1e-6)
    with pytest.raises(tefuse.TefuseError, match="built for batch sizes 1, 4"):
        pg.run(x=torch.randn(2, 6))


def test_a_wrong_dtype_is_one_clear_error():
    b = tefuse.GraphBuilder()
    cg = tefuse.build(b.build(b.relu(b.input("x", (2, 5)))), "llvm")
    with pytest.raises(tefuse.TefuseError, match=r"input 'x': expected float32\[2,5\], got float64\[2,5\]"):
        cg.run(x=torch.zeros(2, 5, dtype=torch.float64))


def test_to_device_keeps_a_torch_tensor_on_the_cpu_in_place():
    x = torch.arange(16, dtype=torch.float32).reshape(4, 4)
    t = to_device(x, tvm.cpu(0))
    assert _ptr(t) == x.data_ptr()
