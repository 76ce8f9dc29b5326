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
