"""graph/views.py: the q/k/v split torch's MultiheadAttention exports, shared by three slices,
cloned per consumer so it is no kernel of its own; a view read by elementwise kernels stays."""
from __future__ import annotations

import numpy as np

import tefuse
from tefuse.graph import GraphBuilder
from tefuse.graph.views import clone_shared_views

from .test_scales import B, E, L, _attention, _run


def test_shared_views_are_cloned_so_the_split_is_no_kernel_of_its_own():
    g = _attention()
    h = clone_shared_views(g)
    squeezes = [n for n in h.nodes if n.op == "squeeze"]
    assert len(squeezes) == 3 and all(len(h.consumers()[s]) == 1 for s in squeezes)
    x = np.random.default_rng(1).standard_normal((L * B, 3 * E)).astype("float32")
    # without the pass the [3, L, B, E] copy is a kernel; with it each product reads x itself
    from tefuse.fusion import fuse_graph

    assert len(fuse_graph(h)) == len(fuse_graph(g)) - 1
    built = tefuse.build(g, "llvm")  # build runs the pass itself (driver.prepare_graph)
    assert built.num_kernels == len(fuse_graph(h))
    np.testing.assert_allclose(built.run(x)[0], _run(g, x, fuse=False), rtol=1e-5, atol=1e-6)


def test_a_view_read_by_elementwise_kernels_stays_shared():
    b = GraphBuilder()
    x = b.input("x", (4, 6))
    t = b.transpose(x, axes=(1, 0))
    g = b.build([b.relu(t), b.sigmoid(t)])
    assert clone_shared_views(g) is g
