"""The driver's retry of a group no config can schedule whole: its anchor is built bare."""
import logging
import re

import numpy as np

import tefuse
from tefuse.codegen.compile import MAX_LOCAL_BYTES
from tefuse.fusion import fuse_graph
from tefuse.graph import GraphBuilder

RNG = np.random.default_rng(0)
BIAS = RNG.standard_normal((1, 3, 49, 49)).astype("f4")
MASK = RNG.standard_normal((1, 64, 1, 49, 49)).astype("f4")


def window_scores():
    """Swin's window attention scores: a batched q @ k^T, the relative-position bias, then the
    shifted-window mask added through a reshape that splits the batch and back. Fused whole, the
    CUDA GEMM's accumulators do not compact to a thread's tile (2 MB a thread)."""
    b = GraphBuilder()
    q, k = b.input("q", (64, 3, 49, 32)), b.input("k", (64, 3, 32, 49))
    s = b.add(b.matmul(q, k), b.const(BIAS))
    s = b.reshape(s, shape=(1, 64, 3, 49, 49))
    s = b.add(s, b.const(MASK))
    return b.build(b.reshape(s, shape=(64, 3, 49, 49)))


def test_bare_anchors_take_no_epilogue():
    g = window_scores()
    assert len(fuse_graph(g)) == 1
    (mm,) = [n.name for n in g.nodes if n.op == "matmul"]
    groups = fuse_graph(g, bare_anchors=frozenset({mm}))
    assert [[n.op for n in grp.nodes] for grp in groups] == [["matmul"], ["add", "reshape", "add", "reshape"]]


def test_a_group_whose_accumulators_stay_whole_is_built_with_its_anchor_bare(caplog):
    with caplog.at_level(logging.INFO, logger="tefuse.driver"):
        cg = tefuse.build(window_scores(), "cuda:sm_90")
    assert [k.template for k in cg.kernels] == ["cuda_dense", "cuda_injective"]
    assert "without its epilogue" in caplog.text and "bytes of local memory per thread" in caplog.text
    for k in cg.kernels:
        sizes = [int(n) * 4 for n in re.findall(r"float \w*local\w*\[(\d+)\]", k.source("cuda"))]
        assert max(sizes, default=0) <= MAX_LOCAL_BYTES


def test_the_llvm_build_stays_one_kernel_and_right():
    q, k = RNG.standard_normal((64, 3, 49, 32)).astype("f4"), RNG.standard_normal((64, 3, 32, 49)).astype("f4")
    cg = tefuse.build(window_scores(), "llvm")
    assert cg.num_kernels == 1
    want = ((q @ k + BIAS).reshape(1, 64, 3, 49, 49) + MASK).reshape(64, 3, 49, 49)
    np.testing.assert_allclose(cg.run(q, k)[0], want, rtol=1e-4, atol=1e-4)
