"""Seeded inputs for a graph's inputs, the given ones kept."""
import numpy as np

from tefuse.graph import GraphBuilder
from tefuse.runtime.feeds import random_inputs


def _graph():
    b = GraphBuilder()
    x, ids, m = b.input("x", (2, 3)), b.input("ids", (4,), "int64"), b.input("m", (2, 3), "bool")
    return b.build([b.where(m, x, x), b.take(b.const(np.ones((4, 6), "f4")), ids)])


def test_seeded_typed_and_given_kept():
    g = _graph()
    a, b = random_inputs(g, seed=3), random_inputs(g, seed=3)
    assert set(a) == {"x", "ids", "m"}
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
    assert a["x"].dtype == np.float32 and ((0 <= a["x"]) & (a["x"] < 1)).all()
    assert a["ids"].dtype == np.int64 and a["ids"].min() >= 0 and a["ids"].max() < 4
    assert a["m"].dtype == np.bool_
    given = np.full((2, 3), 7.0, np.float32)
    assert random_inputs(g, given={"x": given})["x"] is given
    assert not np.array_equal(random_inputs(g, seed=4)["x"], a["x"])
