"""Shared fixtures: a seeded rng, and auto-skip of `@pytest.mark.gpu` tests without a GPU.

The default `addopts` deselect gpu tests (`-m 'not gpu and not slow'`); run them with
`python -m pytest -m gpu tests/gpu`. Without a CUDA device they skip with a reason.
"""
from __future__ import annotations

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
def tefuse_dirs(tmp_path, monkeypatch):
    """A test's own kernel cache and user tuning log under tmp_path, no shipped records: CLI
    tests see neither the machine's files nor each other's."""
    monkeypatch.setenv("TEFUSE_CACHE_DIR", str(tmp_path / "kernels"))
    monkeypatch.setenv("TEFUSE_USER_DB", str(tmp_path / "user.jsonl"))
    monkeypatch.setenv("TEFUSE_SYSTEM_DB", "")
    return tmp_path
