"""The executor's input binding: DLPack tensors on the run's device are used in place."""
from __future__ import annotations

import numpy as np
import pytest
import tvm

import tefuse
from tefuse import GraphBuilder
from tefuse.runtime.executor import to_device


class DLPackOnly:
    """A foreign tensor (as torch or cupy would hand over): only the DLPack protocol."""

    def __init__(self, a: np.ndarray):
        self.a = a

    def __dlpack__(self, **kw):
        return self.a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def aligned(a: np.ndarray, to: int = 64) -> np.ndarray:
    """A copy of `a` whose data starts on a `to`-byte boundary (what TVM's DLPack import needs)."""
    buf = np.empty(a.nbytes + to, np.uint8)
    off = -buf.ctypes.data % to
    out = buf[off:off + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


def test_dlpack_tensor_on_the_same_device_is_not_copied(rng):
    a = aligned(rng.standard_normal((3, 4)).astype("float32"))
    t = to_device(DLPackOnly(a), tvm.cpu(0))
    a[0, 0] = 42.0  # a view shares the memory; a copy would not see this
    assert t.numpy()[0, 0] == 42.0


def test_tvm_tensor_is_used_in_place_only_on_the_same_device(rng):
    a = rng.standard_normal((3, 4)).astype("float32")
    t = tvm.runtime.tensor(a, tvm.cpu(0))
    assert to_device(t, tvm.cpu(0)) is t
    moved = to_device(t, tvm.cpu(1))  # e.g. a host tensor handed to a CUDA graph
    assert moved.device == tvm.cpu(1)
    np.testing.assert_array_equal(moved.numpy(), a)


def test_unaligned_host_dlpack_tensor_is_copied(rng):
    a = rng.standard_normal(17).astype("float32")
    a = aligned(a)[1:]  # 4 bytes past a 64-byte boundary
    t = to_device(DLPackOnly(a), tvm.cpu(0))
    np.testing.assert_array_equal(t.numpy(), a)


def test_graph_runs_on_dlpack_inputs(rng):
    b = GraphBuilder()
    x = b.input("x", (2, 5))
    y = b.input("y", (2, 5))
    cg = tefuse.build(b.build(b.relu(b.add(x, y))), "llvm")
    xa, ya = (rng.standard_normal((2, 5)).astype("float32") for _ in range(2))
    out = cg.run(x=DLPackOnly(xa), y=DLPackOnly(ya))[0]
    np.testing.assert_allclose(out, np.maximum(xa + ya, 0), rtol=1e-6)


def _chain_of_dense(rng, n=4):
    b = GraphBuilder()
    x = b.input("x", (2, 8))
    h, ws = x, []
    for i in range(n):
        ws.append(rng.standard_normal((8, 8)).astype("float32") / 3)
        h = b.relu(b.dense(h, b.const(ws[-1], name=f"w{i}")))
    return b.build(h), ws


def _ref(x, ws):
    for w in ws:
        x = np.maximum(x @ w.T, 0)
    return x


class _CountingModule:
    def __init__(self, mod):
        self.mod, self.lookups = mod, 0

    def __getitem__(self, name):
        self.lookups += 1
        return self.mod[name]


def test_runs_look_kernels_up_once_and_use_each_runs_inputs(rng):
    g, ws = _chain_of_dense(rng)
    cg = tefuse.build(g, "llvm")
    assert cg.num_kernels == 4
    for k in cg.kernels:
        k.module = _CountingModule(k.module)
    for _ in range(3):
        x = rng.standard_normal((2, 8)).astype("float32")
        np.testing.assert_allclose(cg.run(x)[0], _ref(x, ws), rtol=1e-5, atol=1e-6)
    assert [k.module.lookups for k in cg.kernels] == [1, 1, 1, 1]


def test_set_param_takes_effect_on_the_next_run(rng):
    g, ws = _chain_of_dense(rng)
    cg = tefuse.build(g, "llvm")
    x = rng.standard_normal((2, 8)).astype("float32")
    np.testing.assert_allclose(cg.run(x)[0], _ref(x, ws), rtol=1e-5, atol=1e-6)
    ws[2] = rng.standard_normal((8, 8)).astype("float32")
    cg.set_param("w2", ws[2])
    np.testing.assert_allclose(cg.run(x)[0], _ref(x, ws), rtol=1e-5, atol=1e-6)


class _Failing:
    """A module whose kernel raises, as a device error would."""

    def __getitem__(self, name):
        def boom(*args):
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        return boom


def test_a_failed_run_holds_no_input_and_a_new_kernel_list_takes_effect(rng):
    g, ws = _chain_of_dense(rng)
    cg = tefuse.build(g, "llvm")
    x = rng.standard_normal((2, 8)).astype("float32")
    good = cg.kernels
    cg.kernels[2].module, real = _Failing(), cg.kernels[2].module
    with pytest.raises(RuntimeError, match="illegal memory access"):
        cg.run(x)
    assert all(argv[i] is None for _, argv, holes in cg._launches for i, _ in holes)
    cg.kernels[2].module = real  # a new module is looked up again
    np.testing.assert_allclose(cg.run(x)[0], _ref(x, ws), rtol=1e-5, atol=1e-6)
    cg.kernels = good[:1]  # a new list is launched as it is
    assert len(cg._launch_list()) == 1
