"""Multi-tensor Adam (tefuse/optim.py): tensors of different shapes stepped in place in one launch,
against a numpy Adam and torch.optim.Adam."""
from __future__ import annotations

import numpy as np
import pytest

from tefuse.errors import GraphError
from tefuse.optim import MultiTensorAdam, bias_corrected

SHAPES = [(64, 3, 7, 7), (64,), (64,), (256, 64, 1, 1), (1000, 16), (1000,), (3, 5)]
LR, BETAS, EPS = 1e-2, (0.9, 0.999), 1e-8


def numpy_adam(p, g, m, v, step, lr=LR, betas=BETAS, eps=EPS):
    """torch.optim.Adam's step (weight_decay=0, amsgrad=False) in float64."""
    b1, b2 = betas
    m2 = b1 * m + (1 - b1) * g
    v2 = b2 * v + (1 - b2) * g * g
    m_hat, v_hat = m2 / (1 - b1 ** step), v2 / (1 - b2 ** step)
    return p - lr * m_hat / (np.sqrt(v_hat) + eps), m2, v2


def _tensors(rng):
    ps = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    gs = [[rng.standard_normal(s).astype(np.float32) for s in SHAPES] for _ in range(3)]
    return ps, gs


def test_adam_over_tensors_of_different_shapes_is_one_launch_stepped_in_place():
    rng = np.random.default_rng(0)
    opt = MultiTensorAdam(SHAPES, "llvm", lr=LR, betas=BETAS, eps=EPS)
    assert opt.launches == 1
    ps, grads = _tensors(rng)
    ms = [np.zeros(s, np.float32) for s in SHAPES]
    vs = [np.zeros(s, np.float32) for s in SHAPES]
    want = [(p.astype(np.float64), np.zeros(s), np.zeros(s)) for p, s in zip(ps, SHAPES)]
    for step, gs in enumerate(grads, 1):  # each step reads what the one before wrote in place
        opt.step(ps, gs, ms, vs)
        want = [numpy_adam(p, g.astype(np.float64), m, v, step) for (p, m, v), g in zip(want, gs)]
        for k, (p, m, v) in enumerate(want):
            np.testing.assert_allclose(ps[k], p, rtol=1e-5, atol=1e-6, err_msg=f"p{k}, step {step}")
            np.testing.assert_allclose(ms[k], m, rtol=1e-5, atol=1e-7, err_msg=f"m{k}, step {step}")
            np.testing.assert_allclose(vs[k], v, rtol=1e-5, atol=1e-9, err_msg=f"v{k}, step {step}")


def test_adam_steps_as_torch_optim_adam_does():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    ps, grads = _tensors(rng)
    params = [torch.nn.Parameter(torch.from_numpy(p.copy())) for p in ps]
    adam = torch.optim.Adam(params, lr=LR, betas=BETAS, eps=EPS)
    opt = MultiTensorAdam(SHAPES, "llvm", lr=LR, betas=BETAS, eps=EPS)
    ms = [np.zeros(s, np.float32) for s in SHAPES]
    vs = [np.zeros(s, np.float32) for s in SHAPES]
    for gs in grads:
        for prm, g in zip(params, gs):
            prm.grad = torch.from_numpy(g)
        adam.step()
        opt.step(ps, gs, ms, vs)
    for k, prm in enumerate(params):
        np.testing.assert_allclose(ps[k], prm.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=f"p{k}")
        np.testing.assert_allclose(ms[k], adam.state[prm]["exp_avg"].numpy(), rtol=1e-5, atol=1e-7, err_msg=f"m{k}")


def test_apart_each_tensor_is_a_launch_of_its_own():
    opt = MultiTensorAdam(SHAPES[:3], "llvm", horizontal=False)
    assert opt.launches == 3


def test_bias_correction_folds_into_lr_and_eps():
    lr, eps = bias_corrected(1e-3, (0.9, 0.999), 1e-8, 1)
    assert lr == pytest.approx(1e-3 * np.sqrt(0.001) / 0.1) and eps == pytest.approx(1e-8 * np.sqrt(0.001))


def test_a_step_with_the_wrong_number_of_tensors_is_one_line():
    opt = MultiTensorAdam(SHAPES[:2], "llvm")
    with pytest.raises(GraphError, match="2 tensors each of params, grads, m and v, got 1, 2, 2, 2"):
        z = [np.zeros(s, np.float32) for s in SHAPES[:2]]
        opt.step(z[:1], z, z, z)


@pytest.mark.slow  # 60 kernels scheduled and one compiled: ~20 s on two cores
def test_sixty_tensors_are_one_cuda_kernel_past_4_kb_of_parameters():
    """60 tensors' 540 buffers (4.3 KB of pointers): one kernel on sm_90, whose launches take up
    to 32 KB of parameters (CUDA 12.1 and later); compiled by nvcc where it is installed."""
    import re

    shapes = [(7 + k, 3) for k in range(60)]
    opt = MultiTensorAdam(shapes, "cuda:sm_90")
    assert opt.launches == 1
    src = opt.compiled.kernels[0].source("cuda")
    (params,) = re.findall(r"__global__ void __launch_bounds__\(\d+\) main_kernel\(([^)]*)\) \{", src)
    assert params.count("__restrict__") == 60 * 9
