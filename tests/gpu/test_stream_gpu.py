"""run(stream=) on a real GPU: kernels order with torch's work on a side stream, and a whole
graph's launches are captured into a torch CUDA graph and replayed (how a caller
removes the launch loop's overhead)."""
import numpy as np
import pytest

import tefuse
from tefuse import GraphBuilder
from tests.reference import conv2d

pytestmark = pytest.mark.gpu


@pytest.fixture
def torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    return torch


def _two_convs(rng):
    """conv+relu -> conv+add(res)+relu: two kernels, one intermediate buffer."""
    b = GraphBuilder()
    x, res = b.input("x", (2, 16, 14, 14)), b.input("res", (2, 16, 14, 14))
    w1 = (rng.standard_normal((16, 16, 3, 3)) * 0.2).astype("float32")
    w2 = (rng.standard_normal((16, 16, 3, 3)) * 0.2).astype("float32")
    y = b.relu(b.conv2d(x, b.const(w1, name="w1"), padding=1))
    y = b.relu(b.add(b.conv2d(y, b.const(w2, name="w2"), padding=1), res), name="out")
    g = b.build(y)

    def ref(feeds):
        h = np.maximum(conv2d(feeds["x"], w1, padding=1), 0)
        return np.maximum(conv2d(h, w2, padding=1) + feeds["res"], 0)
    return g, ref


def _feeds(rng):
    return {k: rng.standard_normal((2, 16, 14, 14)).astype("float32") for k in ("x", "res")}


def test_run_on_a_torch_side_stream_orders_with_its_work(torch, rng):
    g, ref = _two_convs(rng)
    cg = tefuse.build(g, "cuda")
    assert cg.num_kernels == 2
    feeds = _feeds(rng)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        # inputs written on s just before the run, result read by torch's next op on s:
        # kernels launched anywhere else would race with both
        tin = {k: torch.zeros(v.shape, device="cuda") for k, v in feeds.items()}
        for k, v in feeds.items():
            tin[k].copy_(torch.from_numpy(v).pin_memory(), non_blocking=True)
        out = torch.empty(g.outputs[0].shape, device="cuda")
        cg.run(tin, out=[out], stream=s)
        got = out * 1.0
    s.synchronize()
    np.testing.assert_allclose(got.cpu().numpy(), ref(feeds), rtol=1e-4, atol=1e-4)


def test_graph_launches_captured_into_a_torch_cuda_graph(torch, rng):
    g, ref = _two_convs(rng)
    cg = tefuse.build(g, "cuda")
    static_in = {k: torch.from_numpy(v).cuda() for k, v in _feeds(rng).items()}
    static_out = torch.empty(g.outputs[0].shape, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm-up outside capture: first launches load the modules
        cg.run(static_in, out=[static_out], stream=s)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        cg.run(static_in, out=[static_out], stream=torch.cuda.current_stream())
    for _ in range(2):  # new data in the captured buffers, replayed with no Python launch
        feeds = _feeds(rng)
        for k, v in feeds.items():
            static_in[k].copy_(torch.from_numpy(v))
        static_out.zero_()
        graph.replay()
        torch.cuda.synchronize()
        np.testing.assert_allclose(static_out.cpu().numpy(), ref(feeds), rtol=1e-4, atol=1e-4)
