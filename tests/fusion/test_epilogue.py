"""Where a GEMM epilogue's reshapes send a padded row or column index."""
import numpy as np
import pytest

from tefuse.fusion import FusedGroup, fuse_graph
from tefuse.ops import OpPattern
from tefuse.fusion.epilogue import Spill, padding_spill, reshape_groups
from tefuse.graph import GraphBuilder

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("src,dst,want", [
    ((16, 49, 192), (1, 4, 4, 7, 7, 192), [([0], [0, 1, 2]), ([1], [3, 4]), ([2], [5])]),
    ((1, 4, 7, 4, 7, 192), (1, 28, 28, 192), [([0], [0]), ([1, 2], [1]), ([3, 4], [2]), ([5], [3])]),
    ((6, 4), (4, 6), [([0, 1], [0, 1])]),
    ((4, 5), (3, 7), None),
])
def test_reshape_groups(src, dst, want):
    assert reshape_groups(src, dst) == want


def _gemm_group(batch, m, k, n, epilogue, weight_batched=False):
    b = GraphBuilder()
    x = b.input("x", (*batch, m, k))
    w = b.input("w", (*batch, k, n)) if weight_batched else b.const(RNG.standard_normal((k, n)).astype("f4"))
    y = b.matmul(x, w) if weight_batched else b.add(b.matmul(x, w), b.const(np.ones(n, "f4")))
    groups = fuse_graph(b.build(epilogue(b, y)))
    (group,) = [g for g in groups if g.anchor is not None and g.anchor.op == "matmul"]
    assert group.nodes[-1].op != "matmul", "the epilogue should have fused"
    return group


def test_swins_window_reverse_spills_rows():
    def reverse(b, y):
        y = b.reshape(y, shape=(1, 4, 4, 7, 7, 192))
        return b.reshape(b.transpose(y, axes=[0, 1, 3, 2, 4, 5]), shape=(1, 28, 28, 192))
    assert padding_spill(_gemm_group((16,), 49, 192, 192, reverse)) == Spill(rows=True, cols=False)


def test_rows_flattened_with_columns_spill_columns_only():
    """[16, 49, 192] -> [16, 49 * 192] (a group made by hand: no fusion rule makes it today): a
    padded column lands on the next row's first; a padded row stays past its window's end."""
    b = GraphBuilder()
    x = b.input("x", (16, 49, 32))
    mm = b.matmul(x, b.const(RNG.standard_normal((32, 192)).astype("f4")))
    out = b.reshape(b.relu(mm), shape=(16, 49 * 192))
    g = b.build(out)
    nodes = [n for n in g.nodes if n.is_op]
    group = FusedGroup(0, nodes, [x], [out], OpPattern.OUT_ELEMWISE_FUSABLE, mm)
    assert padding_spill(group) == Spill(rows=False, cols=True)


def test_a_transpose_spills_nothing():
    """Attention's heads moved back next to the tokens: every index keeps its own axis."""
    group = _gemm_group((1, 12), 197, 197, 64, lambda b, y: b.transpose(y, axes=[0, 2, 1, 3]), weight_batched=True)
    assert padding_spill(group) == Spill()


def test_an_elementwise_epilogue_spills_nothing():
    assert padding_spill(_gemm_group((16,), 49, 32, 32, lambda b, y: b.relu(y))) == Spill()
