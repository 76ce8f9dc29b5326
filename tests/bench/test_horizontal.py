"""The horizontal fusion bench's workload and reference (its timing needs a GPU)."""
import numpy as np
import pytest

from tefuse.bench import horizontal


def test_resnet50_has_161_parameter_tensors_of_25_6m_values():
    pytest.importorskip("torchvision")
    shapes = horizontal.resnet50_shapes()
    assert len(shapes) == 161
    assert sum(int(np.prod(s)) for s in shapes) == 25_557_032


def test_the_benchs_reference_is_torch_adams_first_step():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    p, g = rng.standard_normal((3, 50)).astype(np.float32), (rng.standard_normal((3, 50)) * 1e-2).astype(np.float32)
    prm = torch.nn.Parameter(torch.from_numpy(p.copy()))
    prm.grad = torch.from_numpy(g)
    torch.optim.Adam([prm], lr=horizontal.LR, betas=horizontal.BETAS, eps=horizontal.EPS).step()
    want = horizontal.numpy_first_step(p, g)
    assert horizontal.update_error([prm.detach()], [want]) < 1e-3
    assert horizontal.update_error([torch.from_numpy(p)], [want]) > 0.9  # no step at all: about lr off


def test_without_a_gpu_the_bench_says_so():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(SystemExit, match="needs a CUDA GPU"):
        horizontal.main(["--cases", "adam"])
