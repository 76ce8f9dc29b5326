"""The horizontal fusion bench's workload (its timing needs a GPU)."""
import numpy as np
import pytest

from tefuse.bench import horizontal


def test_resnet50_has_161_parameter_tensors_of_25_6m_values():
    pytest.importorskip("torchvision")
    shapes = horizontal.resnet50_shapes()
    assert len(shapes) == 161
    assert sum(int(np.prod(s)) for s in shapes) == 25_557_032


def test_without_a_gpu_the_bench_says_so():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(SystemExit, match="needs a CUDA GPU"):
        horizontal.main(["--cases", "adam"])
