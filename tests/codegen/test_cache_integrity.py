"""Kernel-cache entries carry their key and a checksum, verified before the library is loaded:
a truncated, bit-flipped or swapped library is rebuilt, never dlopened (that SIGBUSed,
segfaulted or ran another kernel). An unusable cache directory costs only the cache."""
import logging
import os

import numpy as np
import pytest

import tefuse
from tefuse.codegen.cache import KernelCache
from tefuse.plan.spec import parse_chain

A = ("conv2d(k=8,r=3,pad=1)+bias+relu", (1, 4, 8, 8))
B = ("conv2d(k=8,r=1)+bias+sigmoid", (1, 4, 8, 8))


def _feeds(graph, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(i.shape).astype(i.dtype) for i in graph.inputs]


def _entry(root, cg):
    (k,) = cg.kernels
    return next(root.glob("*/*.so")) if k is None else None


def _damage(kind, root):
    (entry,) = root.glob("*/*.so")
    data = entry.read_bytes()
    if kind == "truncated":
        entry.write_bytes(data[: len(data) // 3])
    elif kind == "flipped":
        b = bytearray(data)
        for off in range(len(b) // 4, len(b) // 4 + 64):
            b[off] ^= 0xFF
        entry.write_bytes(bytes(b))
    elif kind == "meta_missing":
        entry.with_suffix(".meta").unlink()
    return entry


@pytest.mark.parametrize("kind", ["truncated", "flipped", "meta_missing"])
def test_damaged_entry_is_rebuilt_never_loaded(kind, tmp_path, caplog):
    g = parse_chain(*A)
    feeds = _feeds(g)
    cache = KernelCache(tmp_path)
    ref = tefuse.build(g, "llvm", cache=cache).run(*feeds)[0]
    _damage(kind, tmp_path)
    with caplog.at_level(logging.WARNING, logger="tefuse.codegen.cache"):
        cg = tefuse.build(parse_chain(*A), "llvm", cache=cache)
    assert not cg.kernels[0].from_cache
    assert any("dropping corrupt kernel cache entry" in m for m in caplog.messages), caplog.messages
    np.testing.assert_array_equal(cg.run(*feeds)[0], ref)
    assert tefuse.build(parse_chain(*A), "llvm", cache=cache).kernels[0].from_cache


@pytest.mark.parametrize("with_meta", [False, True])
def test_another_kernels_library_is_not_run(with_meta, tmp_path):
    """Swap B's valid library (and its record) in under A's key: A must be rebuilt, not run B."""
    ca, cb = KernelCache(tmp_path / "a"), KernelCache(tmp_path / "b")
    ga = parse_chain(*A)
    feeds = _feeds(ga)
    ref = tefuse.build(ga, "llvm", cache=ca).run(*feeds)[0]
    tefuse.build(parse_chain(*B), "llvm", cache=cb)
    (ea,), (eb,) = (tmp_path / "a").glob("*/*.so"), (tmp_path / "b").glob("*/*.so")
    ea.write_bytes(eb.read_bytes())
    if with_meta:
        ea.with_suffix(".meta").write_bytes(eb.with_suffix(".meta").read_bytes())
    cg = tefuse.build(parse_chain(*A), "llvm", cache=ca)
    assert not cg.kernels[0].from_cache
    np.testing.assert_array_equal(cg.run(*feeds)[0], ref)


def test_read_only_cache_dir_costs_only_the_cache(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root ignores directory permissions")
    root = tmp_path / "ro"
    root.mkdir()
    root.chmod(0o500)
    try:
        g = parse_chain(*A)
        cg = tefuse.build(g, "llvm", cache=KernelCache(root))
        assert cg.run(*_feeds(g))[0].shape == (1, 8, 8, 8)
    finally:
        root.chmod(0o700)


def test_cache_dir_that_is_a_file_costs_only_the_cache(tmp_path, monkeypatch):
    f = tmp_path / "not_a_dir"
    f.write_text("x")
    monkeypatch.setenv("TEFUSE_CACHE_DIR", str(f))
    g = parse_chain(*A)
    for _ in range(2):
        cg = tefuse.build(g, "llvm", cache="default")
        assert not cg.kernels[0].from_cache
        assert cg.run(*_feeds(g))[0].shape == (1, 8, 8, 8)
    assert f.read_text() == "x"


def test_unremovable_corrupt_entry_costs_only_the_cache(tmp_path, monkeypatch):
    """A read-only cache directory holding a damaged entry: removing it fails (PermissionError,
    simulated so that it also holds for root, who ignores directory modes); the build still
    succeeds, compiles instead of loading, and gives the right numbers."""
    import pathlib

    g = parse_chain(*A)
    ref = tefuse.build(g, "llvm").run(*_feeds(g))[0]
    tefuse.build(g, "llvm", cache=KernelCache(tmp_path))
    _damage("truncated", tmp_path)

    def refuse(self, *a, **k):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(pathlib.Path, "unlink", refuse)
    monkeypatch.setattr(os, "replace", lambda *a, **k: refuse(pathlib.Path(a[1])))
    cg = tefuse.build(g, "llvm", cache=KernelCache(tmp_path))
    assert not cg.kernels[0].from_cache
    np.testing.assert_array_equal(cg.run(*_feeds(g))[0], ref)
