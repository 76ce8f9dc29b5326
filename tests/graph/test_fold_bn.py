"""BN folding rewrites: same numerics, batch_norm gone, only when safe."""
import numpy as np
import pytest

import tefuse
from tefuse.driver import prepare_graph
from tefuse.graph import GraphBuilder
from tefuse.graph.fold_bn import fold_batch_norm, fold_batch_norm_params
from tests.reference import assert_close, batch_norm


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


def _bn_relu(rng, nhwc=False, mean_scale=1.0):
    b = GraphBuilder()
    x = b.input("x", (2, 5, 5, 6) if nhwc else (2, 6, 5, 5))
    stats = [rng.uniform(0.5, 1.5, 6), rng.standard_normal(6), mean_scale * rng.standard_normal(6),
             rng.uniform(0.2, 2.0, 6)]
    return b.build(b.relu(b.batch_norm(x, *(b.const(s.astype("float32")) for s in stats), axis=3 if nhwc else 1)))


@pytest.mark.parametrize("nhwc", [False, True])
def test_constant_statistics_become_a_scale_and_shift(rng, nhwc):
    g = _bn_relu(rng, nhwc)
    f = fold_batch_norm_params(g)
    (ss,) = [n for n in f.nodes if n.op == "scale_shift"]
    assert "batch_norm" not in {n.op for n in f.nodes} and ss.attrs["axis"] == (3 if nhwc else 1)
    gamma, beta, mean, var = (n.value.astype(np.float64) for n in g.constants)
    x = rng.standard_normal(g.inputs[0].shape).astype("float32")
    want = np.maximum(batch_norm(x.astype(np.float64), gamma, beta, mean, var, axis=3 if nhwc else 1), 0)
    assert_close(tefuse.build(f).run(x)[0], want, rtol=1e-5, atol=1e-5)


def test_fp16_builds_keep_the_scale_and_shift_in_float32(rng):
    """Folded after the precision conversion, from the statistics the fp16 model holds, into
    float32 constants: a mean of ~100 cancelling against x's would lose its low bits as an fp16
    shift."""
    g = _bn_relu(rng, nhwc=True, mean_scale=100.0)
    prepared = prepare_graph(g, "cuda:sm_90", precision="fp16")
    (ss,) = [n for n in prepared.nodes if n.op == "scale_shift"]
    assert [i.dtype for i in ss.inputs] == ["float16", "float32", "float32"]
    gamma, beta, mean, var = (n.value.astype(np.float16).astype(np.float64) for n in g.constants)
    x = (mean + rng.standard_normal((2, 5, 5, 6))).astype("float16")  # around the mean
    want = np.maximum(batch_norm(x.astype(np.float64), gamma, beta, mean, var, axis=3), 0)
    got = tefuse.build(g, precision="fp16").run(x.astype("float32"))[0]
    assert_close(got, want, "float32", rtol=2e-3, atol=2e-3)


def test_statistics_given_at_run_time_stay_a_batch_norm(rng):
    b = GraphBuilder()
    x = b.input("x", (1, 3, 4, 4))
    params = [b.input(k, (3,)) for k in ("gamma", "beta", "mean", "var")]
    g = b.build(b.batch_norm(x, *params))
    assert [n.op for n in fold_batch_norm_params(g).nodes if n.is_op] == ["batch_norm"]
