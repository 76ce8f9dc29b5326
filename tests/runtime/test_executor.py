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
    with cg.buffer_set() as bs:  # the set the failed run used, back in the pool
        assert all(argv[i] is None for _, argv, holes in bs.launches for i, _ in holes)
    cg.kernels[2].module = real  # a new module is looked up again
    np.testing.assert_allclose(cg.run(x)[0], _ref(x, ws), rtol=1e-5, atol=1e-6)
    cg.kernels = good[:1]  # a new list is launched as it is
    with cg.buffer_set() as bs:
        assert len(bs.launches) == 1


# -- inputs as a dict, duplicates, byte order; outputs as the inputs' kind, out= buffers -----
def _add_relu(rng):
    b = GraphBuilder()
    x = b.input("x", (2, 5))
    y = b.input("y", (2, 5))
    s = b.add(x, y)
    cg = tefuse.build(b.build([b.relu(s), b.mul(x, y)]), "llvm")
    xa, ya = (rng.standard_normal((2, 5)).astype("float32") for _ in range(2))
    return cg, xa, ya, [np.maximum(xa + ya, 0), xa * ya]


def test_inputs_as_one_dict_onnx_style(rng):
    cg, xa, ya, want = _add_relu(rng)
    for got in (cg.run({"x": xa, "y": ya}), cg.run({"y": ya}, x=xa), cg(xa, y=ya)):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-6)


@pytest.mark.parametrize("call,message", [
    (lambda cg, x, y: cg.run(x, y, x=x), "input 'x' given twice: by position and by name"),
    (lambda cg, x, y: cg.run({"x": x, "y": y}, y=y), "input 'y' given twice: in the dict and by name"),
    (lambda cg, x, y: cg.run({"x": x, "z": y}), "unknown input 'z'"),
    (lambda cg, x, y: cg.run({"x": x}, y), "either as one {name: value} dict or by position"),
    (lambda cg, x, y: cg.run({0: x, 1: y}), "keys must be input names"),
])
def test_an_input_given_twice_or_unknown_is_refused(rng, call, message):
    cg, xa, ya, _ = _add_relu(rng)
    with pytest.raises(tefuse.TefuseError, match=message.replace("(", r"\(").replace("{", r"\{")):
        call(cg, xa, ya)


def test_non_native_byte_order_is_converted(rng):
    cg, xa, ya, want = _add_relu(rng)
    swapped = xa.astype(xa.dtype.newbyteorder("S"))  # same values, the other byte order
    assert not swapped.dtype.isnative
    np.testing.assert_allclose(cg.run(swapped, ya)[0], want[0], rtol=1e-6)


def test_out_buffers_are_written_in_place_and_returned(rng):
    cg, xa, ya, want = _add_relu(rng)
    bufs = [aligned(np.zeros((2, 5), np.float32)) for _ in range(2)]
    got = cg.run(xa, ya, out=bufs)
    assert got[0] is bufs[0] and got[1] is bufs[1]
    for b, w in zip(bufs, want):
        np.testing.assert_allclose(b, w, rtol=1e-6)
    with cg.buffer_set() as bs:
        slot = bs.slots[cg._plan[cg.graph.outputs[0]]].numpy()
    assert not np.allclose(slot, want[0])  # the kernel wrote the caller's buffer, not its own
    # a later run without out= uses the graph's own buffers again, not the caller's
    x2 = rng.standard_normal((2, 5)).astype("float32")
    np.testing.assert_allclose(cg.run(x2, ya)[0], np.maximum(x2 + ya, 0), rtol=1e-6)
    np.testing.assert_allclose(bufs[0], want[0], rtol=1e-6)


def test_an_output_listed_twice_fills_both_buffers_with_this_runs_values(rng):
    """The kernel writes the first buffer in place; the second copies from it, not from the
    graph's own buffer, which this run did not write (it held the last run's values)."""
    b = tefuse.GraphBuilder()
    r = b.relu(b.input("x", (2, 4)))
    cg = tefuse.build(b.build([r, r]), "llvm")
    x = rng.standard_normal((2, 4)).astype("float32")
    cg.run(x - 5)  # the graph's own buffer now holds another run's values
    for bufs in ([aligned(np.zeros((2, 4), np.float32)) for _ in range(2)],
                 [tvm.runtime.empty((2, 4), "float32", tvm.cpu(0)) for _ in range(2)]):
        cg.run(x, out=bufs)
        for buf in bufs:
            np.testing.assert_array_equal(np.asarray(buf.numpy() if hasattr(buf, "numpy") else buf),
                                          np.maximum(x, 0))


def test_out_buffers_tvm_can_not_use_in_place_are_copied_into(rng):
    cg, xa, ya, want = _add_relu(rng)
    names = [o.name for o in cg.graph.outputs]
    strided = np.zeros((4, 5), np.float32)[::2]  # not contiguous: TVM cannot write it in place
    bufs = {names[0]: strided, names[1]: tvm.runtime.empty((2, 5), "float32", tvm.cpu(0))}
    got = cg.run(xa, ya, out=bufs)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    assert got[0] is bufs[names[0]]
    np.testing.assert_allclose(bufs[names[1]].numpy(), want[1], rtol=1e-6)
    with pytest.raises(tefuse.TefuseError, match="expected float32"):
        cg.run(xa, ya, out=[np.zeros((2, 5), np.float64), np.zeros((2, 5), np.float32)])
    with pytest.raises(tefuse.TefuseError, match="2 output"):
        cg.run(xa, ya, out=[np.zeros((2, 5), np.float32)])


class FakeTensor:
    """A tensor of a framework ("fakefw") that speaks DLPack, as torch and cupy do."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, **kw):
        return self.a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


@pytest.fixture
def fakefw(monkeypatch):
    """A module `fakefw` with FakeTensor and from_dlpack (which counts its calls)."""
    import sys
    import types

    mod = types.ModuleType("fakefw")
    mod.calls = 0

    def from_dlpack(x):
        mod.calls += 1
        return FakeTensor(np.from_dlpack(x))  # a view: no copy

    mod.from_dlpack = from_dlpack
    mod.Tensor = FakeTensor
    monkeypatch.setattr(FakeTensor, "__module__", "fakefw")
    monkeypatch.setitem(sys.modules, "fakefw", mod)
    return mod


def test_framework_tensors_in_give_framework_tensors_out_through_dlpack(rng, fakefw):
    cg, xa, ya, want = _add_relu(rng)
    x, y = FakeTensor(aligned(xa)), FakeTensor(aligned(ya))
    first = cg.run(x, y)
    assert all(isinstance(t, FakeTensor) for t in first) and fakefw.calls == 2
    for t, w in zip(first, want):
        np.testing.assert_allclose(t.a, w, rtol=1e-6)
    x2 = FakeTensor(aligned(rng.standard_normal((2, 5)).astype("float32")))
    second = cg.run({"x": x2, "y": y})
    np.testing.assert_allclose(first[0].a, want[0], rtol=1e-6)  # new tensors each run: not overwritten
    assert not np.shares_memory(first[0].a, second[0].a)
    np.testing.assert_allclose(second[0].a, np.maximum(x2.a + ya, 0), rtol=1e-6)
    assert isinstance(cg.run(x, y, as_numpy=True)[0], np.ndarray)


def test_torch_tensors_in_torch_tensors_out():
    torch = pytest.importorskip("torch")
    b = GraphBuilder()
    x = b.input("x", (4, 8))
    cg = tefuse.build(b.build(b.relu(x)), "llvm")
    xt = torch.randn(4, 8)
    (y,) = cg.run(x=xt)
    assert isinstance(y, torch.Tensor) and y.device == xt.device
    torch.testing.assert_close(y, torch.relu(xt))
    buf = torch.empty(4, 8)
    (same,) = cg.run({"x": xt}, out=[buf])
    assert same is buf and torch.equal(buf, torch.relu(xt))


def test_none_as_an_input_is_one_clear_error():
    from tefuse.errors import TefuseError
    from tefuse.graph import GraphBuilder

    b = GraphBuilder()
    x = b.input("x", (2, 3))
    cg = tefuse.build(b.build(b.relu(x)), "llvm")
    with pytest.raises(TefuseError, match=r"input 'x': got None, expected an array \(float32\[2,3\]\)"):
        cg.run(None)
    with pytest.raises(TefuseError, match="input 'x': got None"):
        cg.run({"x": None})


class _StreamSpy:
    """A kernel module whose function records the device's current stream at each launch."""

    def __init__(self, mod, device, seen):
        self.mod, self.device, self.seen = mod, device, seen

    def __getitem__(self, name):
        import tvm_ffi

        f = self.mod[name]

        def launch(*args):
            self.seen.append(tvm_ffi.get_raw_stream(self.device))
            return f(*args)

        return launch


def test_kernels_launch_on_the_stream_given(rng):
    class TorchLikeStream:  # what torch.cuda.Stream offers
        cuda_stream = 0x5EED

    g, ws = _chain_of_dense(rng)
    cg = tefuse.build(g, "llvm")
    seen: list = []
    for k in cg.kernels:
        k.module = _StreamSpy(k.module, cg.device, seen)
    x = rng.standard_normal((2, 8)).astype("float32")
    np.testing.assert_allclose(cg.run(x, stream=0x1234)[0], _ref(x, ws), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(cg.run(x, stream=TorchLikeStream())[0], _ref(x, ws), rtol=1e-5, atol=1e-6)
    cg.run(x)
    assert seen == [0x1234] * 4 + [0x5EED] * 4 + [seen[-1]] * 4 and seen[-1] not in (0x1234, 0x5EED)
    with pytest.raises(tefuse.TefuseError, match="stream=: expected a stream handle"):
        cg.run(x, stream="default")
