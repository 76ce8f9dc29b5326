"""Tuned builds (a tuning log picks the config) and the on-disk kernel cache."""
import importlib
import logging

import numpy as np
import pytest

import tefuse.schedules as schedules
import tefuse
from tefuse.codegen.cache import KernelCache
from tefuse.codegen.lower import lower_group
from tefuse.plan.spec import parse_chain
from tefuse.target import make_target
from tefuse.tune.database import Database
from tefuse.tune.record import TuningRecord
from tefuse.fusion.workload import workload_key

import tefuse.codegen.compile as C  # noqa: E402
import tefuse.driver as B  # noqa: E402
CHAIN, SHAPE = "conv2d(k=8,r=3,pad=1)+bias+relu", (1, 4, 8, 8)


def _graph():
    return parse_chain(CHAIN, SHAPE)


def _write_log(path):
    """Two measured configs (the second faster) and a faster-but-wrong one for the workload."""
    group = tefuse.fuse_graph(_graph())[0]
    target = make_target("cuda")
    info = lower_group(group).info
    (template,) = [t for t in schedules.get_templates("cuda", "conv2d") if t.name == "conv2d_direct"]
    assert template.name == "conv2d_direct"
    space = template.space(info, target)
    key = workload_key(group)

    def rec(idx, costs, error=None):
        return TuningRecord(workload=key, target="cuda-sm_90", device="NVIDIA H100 80GB HBM3",
                            template="conv2d_direct", config=space.get(idx).to_json(), config_index=idx,
                            costs=costs, error=error)

    path.write_text("".join(r.to_json() + "\n" for r in (
        rec(100, [2e-5, 2.1e-5, 1.9e-5]), rec(1000, [1e-5, 1.1e-5, 0.9e-5]), rec(7, [1e-7], "wrong_result"))))
    return key


def test_tuning_log_picks_the_best_config(tmp_path):
    log = tmp_path / "tuning.jsonl"
    key = _write_log(log)
    cg = tefuse.build(_graph(), "cuda", db=Database(log))
    (k,) = cg.kernels
    assert k.workload == key
    assert (k.config_source, k.template, k.config_index) == ("tuned", "conv2d_direct", 1000)
    assert "__global__" in k.source("cuda")
    untuned = tefuse.build(_graph(), "cuda")  # db=None: hermetic fallback
    assert untuned.kernels[0].config_source == "fallback"


def test_default_database_from_environment(tmp_path, monkeypatch):
    log = tmp_path / "user.jsonl"
    _write_log(log)
    monkeypatch.setenv("TEFUSE_USER_DB", str(log))
    monkeypatch.setenv("TEFUSE_SYSTEM_DB", "")
    k = tefuse.build(_graph(), "cuda", db="default").kernels[0]
    assert (k.config_source, k.config_index) == ("tuned", 1000)


def _count_compiles(monkeypatch):
    calls = []
    real = C.device_compile

    def counting(mod, target, pass_config=None):
        calls.append(target.kind.name)
        return real(mod, target, pass_config)

    monkeypatch.setattr(C, "device_compile", counting)
    return calls


def _inputs(rng):
    return [rng.standard_normal(n.shape).astype("float32") for n in _graph().inputs]


def test_second_build_compiles_nothing(tmp_path, monkeypatch, rng):
    calls = _count_compiles(monkeypatch)
    cache = KernelCache(tmp_path / "kernels")
    args = _inputs(rng)
    first = tefuse.build(_graph(), "llvm", cache=cache)
    assert calls == ["llvm"] and not first.kernels[0].from_cache
    assert len(list((tmp_path / "kernels").glob("*/*.so"))) == 1
    second = tefuse.build(_graph(), "llvm", cache=cache)
    assert calls == ["llvm"] and second.kernels[0].from_cache
    (a,), (b,) = first.run(*args), second.run(*args)
    np.testing.assert_array_equal(a, b)
    assert np.abs(a).max() > 0
    # another config is another entry
    monkeypatch.setattr(B, "choose_schedule", lambda lowered, target, db=None, options=None, predictor=None,
                        record_key=None, record_structure=None: _other_choice(lowered, target))
    tefuse.build(_graph(), "llvm", cache=cache)
    assert len(calls) == 2


def _other_choice(lowered, target):
    from tefuse.codegen.schedule import ScheduleChoice, find_template
    t = find_template(target, lowered.info.anchor_kind)[0]
    space = t.space(lowered.info, target)
    fb = t.fallback(lowered.info, target, space)
    other = next((c for c in space if c.index != fb.index), None)
    if other is None:
        pytest.skip("the llvm template has a single config")
    return ScheduleChoice(t, other, "fallback")


def test_default_cache_dir_and_string(tmp_path, monkeypatch):
    monkeypatch.setenv("TEFUSE_CACHE_DIR", str(tmp_path / "kc"))
    calls = _count_compiles(monkeypatch)
    tefuse.build(_graph(), "llvm", cache="default")
    assert tefuse.build(_graph(), "llvm", cache="default").kernels[0].from_cache
    assert len(calls) == 1 and list((tmp_path / "kc").glob("*/*.so"))


def test_corrupt_entry_is_dropped_and_rebuilt(tmp_path, monkeypatch, caplog, rng):
    cache = KernelCache(tmp_path)
    args = _inputs(rng)
    ref = tefuse.build(_graph(), "llvm", cache=cache).run(*args)[0]
    (entry,) = tmp_path.glob("*/*.so")
    entry.write_bytes(b"\x7fELF garbage, not a shared library")
    calls = _count_compiles(monkeypatch)
    with caplog.at_level(logging.WARNING, logger="tefuse.codegen.cache"):
        cg = tefuse.build(_graph(), "llvm", cache=cache)
    assert any("corrupt" in m for m in caplog.messages)
    assert calls == ["llvm"] and not cg.kernels[0].from_cache
    np.testing.assert_array_equal(cg.run(*args)[0], ref)
    assert tefuse.build(_graph(), "llvm", cache=cache).kernels[0].from_cache  # rewritten, loads again


def test_key_covers_target_and_config(tmp_path):
    group = tefuse.fuse_graph(_graph())[0]
    lowered = lower_group(group)
    from tefuse.codegen.schedule import choose_schedule
    cache, key = KernelCache(tmp_path), workload_key(group)
    llvm, cuda, cuda80 = make_target("llvm"), make_target("cuda"), make_target("cuda:sm_80")
    ch = choose_schedule(lowered, cuda)
    keys = {cache.key(key, llvm, choose_schedule(lowered, llvm)), cache.key(key, cuda, ch), cache.key(key, cuda80, ch),
            cache.key(key + "x", cuda, ch), cache.key(key, cuda, _other_choice(lowered, cuda))}
    assert len(keys) == 5
    assert cache.key(key, cuda, ch) == KernelCache(tmp_path / "elsewhere").key(key, cuda, ch)


def test_cuda_module_exports(tmp_path):
    """A CUDA build exports to a shared library; without a CUDA runtime here it is neither
    cached (it could not be loaded back) nor deleted when found in the cache."""
    import tvm

    group = tefuse.fuse_graph(_graph())[0]
    k = tefuse.build(_graph(), "cuda").kernels[0]
    lib = tmp_path / "k.so"
    k.module.export_library(str(lib))
    assert lib.stat().st_size > 0
    cache = KernelCache(tmp_path / "kc")
    target = make_target("cuda")
    choice = B.choose_schedule(lower_group(group), target)
    if tvm.runtime.enabled("cuda"):
        pytest.skip("CUDA runtime present: covered by test_cuda_cache_round_trip_gpu")
    assert cache.store(k.workload, target, choice, k.module) is None
    entry = cache.path(cache.key(k.workload, target, choice))
    entry.parent.mkdir(parents=True)
    entry.write_bytes(lib.read_bytes())
    import hashlib
    import json
    data = entry.read_bytes()  # the checksum record store() writes beside an entry
    cache.meta_path(entry).write_text(json.dumps({"key": cache.key(k.workload, target, choice),
                                                  "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}))
    assert cache.load(k.workload, target, choice) is None and entry.exists()


@pytest.mark.gpu
def test_cuda_cache_round_trip_gpu(tmp_path, monkeypatch, rng):
    calls = _count_compiles(monkeypatch)
    cache = KernelCache(tmp_path)
    args = _inputs(rng)
    first = tefuse.build(_graph(), "cuda", cache=cache)
    a, first_source = first.run(*args)[0], first.kernels[0].source("cuda")
    second = tefuse.build(_graph(), "cuda", cache=cache)
    assert calls == ["cuda"] and second.kernels[0].from_cache
    np.testing.assert_allclose(second.run(*args)[0], a, rtol=1e-5, atol=1e-5)
    assert "__global__" in first_source and second.kernels[0].source("cuda") == first_source


def test_record_for_a_template_that_no_longer_serves_the_group_is_ignored_with_a_warning(tmp_path, caplog):
    """A record naming a template that refuses the group (renamed, or now restricted by
    `accepts`) falls back, and says so instead of dropping the record silently."""
    group = tefuse.fuse_graph(_graph())[0]
    log = tmp_path / "tuning.jsonl"
    log.write_text(TuningRecord(workload=workload_key(group), target="cuda-sm_90", device="NVIDIA H100 80GB HBM3",
                                template="conv2d_retired", config={"tile": [1, 2]}, config_index=0,
                                costs=[1e-6]).to_json() + "\n")
    with caplog.at_level(logging.WARNING, logger="tefuse.codegen.schedule"):
        cg = tefuse.build(_graph(), "cuda", db=Database(log))
    assert cg.kernels[0].config_source == "fallback"
    assert any("conv2d_retired" in r.getMessage() and "ignoring" in r.getMessage() for r in caplog.records)


def test_device_source_is_stored_beside_the_entry(tmp_path):
    """A library loaded from the cache no longer holds its CUDA source; the sidecar does."""
    group = tefuse.fuse_graph(_graph())[0]
    target = make_target("llvm")
    k = tefuse.build(_graph(), "llvm").kernels[0]
    choice = B.choose_schedule(lower_group(group), target)
    cache = KernelCache(tmp_path)
    assert cache.load_source(k.workload, target, choice) == ""
    entry = cache.store(k.workload, target, choice, k.module, source="__global__ void k() {}")
    assert entry is not None and cache.load_source(k.workload, target, choice) == "__global__ void k() {}"
    assert cache.clear() == 1 and not list(tmp_path.glob("*/*"))


def test_cuda_kernel_keeps_its_generated_source():
    k = tefuse.build(_graph(), "cuda").kernels[0]
    assert "__global__" in k.device_source and k.source("cuda") == k.device_source


def test_key_covers_the_build_options_and_the_defaults_add_nothing(tmp_path):
    """A kernel chosen under options off their defaults is another entry; under the defaults the
    key is what it was before options existed (no entry of an old cache is lost)."""
    import dataclasses
    import hashlib
    import json

    import tvm

    from tefuse.codegen.cache import source_fingerprint
    from tefuse.codegen.schedule import choose_schedule
    from tefuse.options import BuildOptions
    from tefuse.version import __version__

    group = tefuse.fuse_graph(_graph())[0]
    cuda = make_target("cuda")
    ch = choose_schedule(lower_group(group), cuda)
    cache, key = KernelCache(tmp_path), workload_key(group)
    values = {k: list(v) if isinstance(v, tuple) else v for k, v in ch.config.values.items()}
    old = hashlib.sha256(json.dumps([key, ch.template.name, values, str(cuda), __version__, tvm.__version__,
                                     source_fingerprint()], sort_keys=True, default=str).encode()).hexdigest()
    assert cache.key(key, cuda, ch) == old
    assert cache.key(key, cuda, dataclasses.replace(ch, options=BuildOptions(prefer_mfma=True))) != old
