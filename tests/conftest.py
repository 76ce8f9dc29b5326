"""Shared fixtures: a seeded rng, auto-skip of `@pytest.mark.gpu` tests without a GPU, and the
ROCm toolchain for tests that build AMDGPU code objects.

The default `addopts` deselect gpu tests (`-m 'not gpu and not slow'`); run them with
`python -m pytest -m gpu tests/gpu`. Without a CUDA device they skip with a reason.

A ROCm build links ROCm's device libraries with an ld.lld new enough for TVM's LLVM (Debian:
rocm-device-libs, lld-22; llvm-22 for llvm-objdump). Tests that need them take the `toolchain`
(and `objdump`) fixture: without them they skip, and with TEFUSE_REQUIRE_ROCM=1 (set by .ci/run
once it has installed them) they fail, so a broken install cannot pass as skips.
"""
from __future__ import annotations

import os
import zlib

import numpy as np
import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU (skipped without one)")


def _has_gpu() -> bool:
    try:
        from tefuse.target import has_gpu
        return has_gpu("cuda")
    except Exception:  # noqa: BLE001 - no CUDA runtime in this TVM build
        return False


def pytest_collection_modifyitems(config, items):
    gpu_items = [it for it in items if it.get_closest_marker("gpu")]
    if not gpu_items or _has_gpu():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (tefuse.target.has_gpu() is False)")
    for it in gpu_items:
        it.add_marker(skip)


@pytest.fixture
def rng(request) -> np.random.Generator:
    """A numpy Generator seeded from the test's node id: reproducible, and distinct per test."""
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


@pytest.fixture
def torch_installed() -> None:
    """For tests of what happens where PyTorch is installed (workers that keep it out): skip
    without it, found without importing it; fail instead under TEFUSE_REQUIRE_TORCH=1 (.ci/run)."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        if os.environ.get("TEFUSE_REQUIRE_TORCH"):
            pytest.fail("TEFUSE_REQUIRE_TORCH=1 but torch is not installed", pytrace=False)
        pytest.skip("torch is not installed")


@pytest.fixture
def tefuse_dirs(tmp_path, monkeypatch):
    """A test's own kernel cache and user tuning log under tmp_path, no shipped records: CLI
    tests see neither the machine's files nor each other's."""
    monkeypatch.setenv("TEFUSE_CACHE_DIR", str(tmp_path / "kernels"))
    monkeypatch.setenv("TEFUSE_USER_DB", str(tmp_path / "user.jsonl"))
    monkeypatch.setenv("TEFUSE_SYSTEM_DB", "")
    return tmp_path


def _rocm_missing(what: str):
    """Skip, or fail under TEFUSE_REQUIRE_ROCM=1: a ROCm test cannot run here because of `what`."""
    if os.environ.get("TEFUSE_REQUIRE_ROCM") == "1":
        pytest.fail(f"TEFUSE_REQUIRE_ROCM=1 but {what}")
    pytest.skip(what)


def _llvm_has_amdgpu() -> bool:
    import tvm
    try:
        return "amdgcn" in tvm.target.codegen.llvm_get_targets()
    except Exception:  # noqa: BLE001 - a TVM built without LLVM
        return False


@pytest.fixture(scope="session")
def toolchain():
    """The ROCm toolchain (`tefuse.target.RocmToolchain`) a ROCm build links with."""
    from tefuse.target import rocm_toolchain

    if not _llvm_has_amdgpu():
        _rocm_missing("TVM's LLVM has no AMDGPU backend")
    tc = rocm_toolchain()
    if not tc.ok:
        _rocm_missing("; ".join(tc.problems))
    return tc


@pytest.fixture(scope="session")
def objdump(toolchain):
    """The llvm-objdump that disassembles AMDGPU code objects."""
    from tefuse.codegen.rocm import find_objdump

    tool = find_objdump()
    if tool is None:
        _rocm_missing("no llvm-objdump")
    return tool
