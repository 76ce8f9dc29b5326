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


def test_fold_scales_the_output_channel_of_nhwc_weights_in_either_layout(rng):
    """An NHWC conv's weight keeps K last as HWIO and first as OHWI (graph/weights.py): folding
    scales that axis in both (4 input and 6 output channels, so a wrong axis cannot broadcast)."""
    for wl in ("HWIO", "OHWI"):
        b = GraphBuilder()
        x = b.input("x", (1, 8, 8, 4))
        w = rng.standard_normal((3, 3, 4, 6)).astype("float32")
        if wl == "OHWI":
            w = np.ascontiguousarray(w.transpose(3, 0, 1, 2))
        c = b.conv2d(x, b.const(w), padding=1, layout="NHWC", **({"weight_layout": wl} if wl == "OHWI" else {}))
        stats = [rng.standard_normal(6).astype("float32") for _ in range(3)] + [rng.random(6).astype("float32") + 0.5]
        g = b.build(b.batch_norm(c, *map(b.const, stats), axis=3))
        f = fold_batch_norm(g)
        assert "batch_norm" not in {n.op for n in f.nodes}, wl
        xv = rng.standard_normal((1, 8, 8, 4)).astype("float32")
        np.testing.assert_allclose(tefuse.build(f).run(xv)[0], tefuse.build(g).run(xv)[0], rtol=1e-4, atol=1e-4)
