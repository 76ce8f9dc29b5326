"""BN folding rewrite: same numerics, batch_norm gone, only when safe."""
import numpy as np

import tefuse
from tefuse.graph import GraphBuilder
from tefuse.graph.fold_bn import fold_batch_norm


def _graph(rng, conv_also_output=False):
    b = GraphBuilder()
    x = b.input("x", (1, 4, 8, 8))
    c = b.conv2d(x, b.const(rng.standard_normal((6, 4, 3, 3)).astype("float32")), padding=1)
    y = b.bias_add(c, b.const(rng.standard_normal(6).astype("float32")))
    stats = [rng.standard_normal(6).astype("float32") for _ in range(3)] + [rng.random(6).astype("float32") + 0.5]
    y = b.relu(b.batch_norm(y, *map(b.const, stats)))
    return b.build([y, c] if conv_also_output else y)


def test_fold_matches(rng):
    g = _graph(rng)
    f = fold_batch_norm(g)
    assert "batch_norm" not in {n.op for n in f.nodes}
    x = rng.standard_normal((1, 4, 8, 8)).astype("float32")
    np.testing.assert_allclose(tefuse.build(f).run(x)[0], tefuse.build(g).run(x)[0], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(tefuse.build(g, fold_bn=True).run(x)[0], tefuse.build(g).run(x)[0],
                               rtol=1e-4, atol=1e-5)


def test_no_fold_when_conv_is_also_an_output(rng):
    f = fold_batch_norm(_graph(rng, conv_also_output=True))
    assert "batch_norm" in {n.op for n in f.nodes}
