"""The template registry: lookups by target family, and preloading a family's lazy imports."""
from __future__ import annotations

import pytest

from tefuse.schedules import registry
from tefuse.tune import builder as builder_mod


class _Loads(registry.Template):
    name = "test_preloading"
    loaded = 0

    def preload(self) -> None:
        type(self).loaded += 1


@pytest.fixture
def fake_family(monkeypatch):
    monkeypatch.setitem(registry.FAMILIES, "fakegpu", ("fakegpu",))
    monkeypatch.setitem(registry._TEMPLATES, ("fakegpu", "dense"), [])
    monkeypatch.setitem(registry._TEMPLATES, ("fakegpu", "conv2d"), [])
    registry.register("fakegpu", "dense", "conv2d")(_Loads)
    _Loads.loaded = 0
    return _Loads


def test_preload_runs_each_template_of_the_family_once(fake_family):
    registry.preload("fakegpu")
    assert fake_family.loaded == 1  # registered for two anchor kinds, preloaded once
    registry.preload("llvm")
    assert fake_family.loaded == 1


def test_build_workers_preload_the_target_family_before_their_first_build(monkeypatch):
    seen = {}

    class Pool:
        def __init__(self, n, timeout=None, initializer=None, initargs=(), **kw):
            seen["initializer"], seen["initargs"] = initializer, initargs

    monkeypatch.setattr(builder_mod, "LeanPopenPoolExecutor", Pool)
    b = builder_mod.LocalBuilder(n_parallel=1)
    try:
        b._get_pool("cuda")
    finally:
        b._pool = None
        b.close()
    assert seen["initializer"] is builder_mod._warm and seen["initargs"][1] == "cuda"


def test_the_cuda_family_preloads_the_tensor_intrinsics():
    from tefuse.schedules.cuda.gemm.template import TensorCoreGemm

    assert "preload" in vars(TensorCoreGemm)
    assert any(isinstance(t, TensorCoreGemm) for t in registry.get_templates("cuda", "dense"))
