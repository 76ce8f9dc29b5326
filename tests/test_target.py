"""Targets: names to TVM targets, and the CUDA compiler choice."""
import os

import pytest

import tefuse.target as T
from tefuse.errors import TefuseError


def test_target_names():
    assert T.target_key(T.make_target("cuda")) == "cuda-sm_90"
    assert T.target_key(T.make_target("cuda:sm_80")) == "cuda-sm_80"
    assert T.target_key(T.make_target("cpu")) == "llvm"
    with pytest.raises(TefuseError, match="unknown target 'tpu'"):
        T.make_target("tpu")


@pytest.mark.parametrize("preset, nvcc, want", [
    (None, "/usr/local/cuda/bin/nvcc", "nvcc"),  # nvcc compiles in parallel threads; NVRTC serialises
    (None, None, None),  # TVM's default (NVRTC)
    ("nvrtc", "/usr/local/cuda/bin/nvcc", "nvrtc"),  # the user's choice stands
])
def test_cuda_compiler_choice(monkeypatch, preset, nvcc, want):
    monkeypatch.setenv("TVM_CUDA_COMPILE_MODE", "x")  # so that monkeypatch restores the original
    if preset is None:
        monkeypatch.delenv("TVM_CUDA_COMPILE_MODE")
    else:
        monkeypatch.setenv("TVM_CUDA_COMPILE_MODE", preset)
    monkeypatch.setattr(T.shutil, "which", lambda name: nvcc if name == "nvcc" else None)
    T.ensure_cuda_compiler()
    assert os.environ.get("TVM_CUDA_COMPILE_MODE") == want


def test_device_caps_of_the_default_cuda_target_are_the_h100_numbers():
    """The templates' former constants: a refactor onto DeviceCaps changes no sm_90 kernel."""
    from tefuse.target import DeviceCaps, device_caps, make_target

    lim = device_caps(make_target("cuda"))
    assert lim == DeviceCaps(warp_size=32, sm_count=132, max_threads_per_block=1024,
                            max_shared_memory_per_block=49152, registers_per_block=65536)
    assert device_caps(None) == lim


def test_device_caps_read_the_arch_and_the_target_attrs():
    from tefuse.target import device_caps, make_target

    assert device_caps(make_target("cuda:sm_80")).sm_count == 108
    assert device_caps(make_target("cuda:sm_89")).sm_count == 128
    assert device_caps(make_target("cuda", max_shared_memory_per_block=65536)).max_shared_memory_per_block == 65536
    rocm = device_caps(make_target("rocm:gfx942"))
    assert (rocm.warp_size, rocm.sm_count) == (64, 304)
    assert device_caps(make_target("rocm")).sm_count == 110  # gfx90a
