"""Multi-tensor Adam (tefuse/optim.py): tensors of different shapes stepped in place, in fewer
launches than tensors, against numpy."""
from __future__ import annotations

import numpy as np
import pytest

from tefuse.errors import GraphError
from tefuse.optim import MultiTensorAdam

SHAPES = [(64, 3, 7, 7), (64,), (64,), (256, 64, 1, 1), (1000, 16), (1000,)]


def _reference(p, g, m, v, lr, b1=0.9, b2=0.999, eps=1e-8):
    p, g, m, v = (a.astype(np.float64) for a in (p, g, m, v))
    m2 = b1 * m + (1 - b1) * g
    v2 = b2 * v + (1 - b2) * g * g
    return p - lr * m2 / (np.sqrt(v2) + eps), m2, v2


def test_adam_over_tensors_of_different_shapes_steps_them_in_place():
    rng = np.random.default_rng(0)
    opt = MultiTensorAdam(SHAPES, "llvm", lr=1e-2)
    apart = MultiTensorAdam(SHAPES, "llvm", lr=1e-2, horizontal=False)
    assert apart.launches == len(SHAPES) and opt.launches < len(SHAPES)
    ps = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    gs = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    ms = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    vs = [rng.uniform(0.01, 1, s).astype(np.float32) for s in SHAPES]
    want = [_reference(*a, lr=1e-2) for a in zip(ps, gs, ms, vs)]
    for _ in range(2):  # two steps: the second reads what the first wrote in place
        want_next = [_reference(w[0], g, w[1], w[2], lr=1e-2) for w, g in zip(want, gs)] if _ else want
        opt.step(ps, gs, ms, vs)
        for k, (p, m, v) in enumerate(want_next):
            np.testing.assert_allclose(ps[k], p, rtol=1e-4, atol=1e-6, err_msg=f"p{k}")
            np.testing.assert_allclose(ms[k], m, rtol=1e-4, atol=1e-6, err_msg=f"m{k}")
            np.testing.assert_allclose(vs[k], v, rtol=1e-4, atol=1e-6, err_msg=f"v{k}")
        want = want_next


def test_a_step_with_the_wrong_number_of_tensors_is_one_line():
    opt = MultiTensorAdam(SHAPES[:2], "llvm")
    with pytest.raises(GraphError, match="2 tensors each of params, grads, m and v, got 1, 2, 2, 2"):
        z = [np.zeros(s, np.float32) for s in SHAPES[:2]]
        opt.step(z[:1], z, z, z)
