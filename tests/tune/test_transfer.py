"""The transfer cost model: trained on records of some workloads of a template, it ranks an unseen
workload's configs the way those records timed them; an untuned build takes its pick
('predicted'), unless the option is off; a damaged model cache entry is never loaded."""
from __future__ import annotations

import logging
import zlib

import numpy as np
import pytest

import tefuse
from tefuse.graph.ir import GraphBuilder
from tefuse.options import BuildOptions
from tefuse.schedules.space import ConfigSpace
from tefuse.tune.database import Database
from tefuse.tune.model_cache import ModelCache
from tefuse.tune.record import TuningRecord
from tefuse.tune.transfer import TransferModel, TransferPredictor, samples_by_template

UNROLLS = [0, 16, 64, 256]
FAST = 64  # the synthetic logs time unroll=64 fastest on every workload


def _cost(shape: tuple, config: dict) -> float:
    """Seconds: the workload's size times a penalty away from unroll=FAST (and for 1 loop)."""
    size = float(np.prod(shape)) * 1e-9
    return size * (1 + abs(np.log2(1 + config["unroll"]) - np.log2(1 + FAST)) + 0.3 * (config["parallel_loops"] == 1))


def synthetic_records(shapes, target="llvm", template="cpu_generic") -> list[TuningRecord]:
    """Every cpu_generic config timed on each shape by _cost: unroll=FAST is fastest everywhere."""
    out = []
    for shape in shapes:
        wl = f"relu|{'x'.join(map(str, shape))}|float32|{zlib.crc32(repr(shape).encode()):016x}"
        for k, (loops, unroll, explicit) in enumerate([(p, u, e) for p in (2, 1) for u in UNROLLS for e in (1, 0)]):
            cfg = {"parallel_loops": loops, "unroll": unroll, "unroll_explicit": explicit}
            c = _cost(shape, cfg)
            out.append(TuningRecord(wl, target, "cpu", template, cfg, k, [c, c * 1.01, c * 0.99]))
    return out


def _space() -> ConfigSpace:
    s = ConfigSpace()
    s.define_knob("parallel_loops", [2, 1])
    s.define_knob("unroll", UNROLLS)
    s.define_knob("unroll_explicit", [1, 0])
    return s


def test_model_ranks_a_faster_config_above_a_slower_one_for_an_unseen_workload():
    samples = samples_by_template(synthetic_records([(8, 32), (64, 64), (16, 128)]))[("llvm", "cpu_generic")]
    model = TransferModel.train(samples)
    unseen = "relu|32x256|float32|0123456789abcdef"
    fast, slow = {"parallel_loops": 2, "unroll": FAST, "unroll_explicit": 1}, \
        {"parallel_loops": 1, "unroll": 0, "unroll_explicit": 1}
    s_fast, s_slow = model.scores(unseen, [fast, slow])
    assert s_fast > s_slow
    # and through bytes (the disk cache's form), the same scores
    again = TransferModel.from_bytes(model.to_bytes())
    np.testing.assert_array_equal(again.scores(unseen, [fast, slow]), [s_fast, s_slow])


def test_no_model_without_two_workloads_timing_two_configs():
    one = samples_by_template(synthetic_records([(8, 32)]))[("llvm", "cpu_generic")]
    assert TransferModel.train(one) is None
    pred = TransferPredictor(synthetic_records([(8, 32), (64, 64)]))
    space = _space()
    assert pred.pick("relu|4x4|float32|x", "cuda-sm_90", ("cpu_generic",), space, space.get(0)) is None
    assert pred.pick("relu|4x4|float32|x", "llvm", ("other",), space, space.get(0)) is None


def test_predictor_picks_the_fast_config_of_the_space(tmp_path):
    pred = TransferPredictor(synthetic_records([(8, 32), (64, 64), (16, 128)]), ModelCache(tmp_path))
    space = _space()
    pick = pred.pick("relu|32x256|float32|0123456789abcdef", "llvm", ("cpu_generic",), space, space.get(0))
    assert pick is not None and pick.values["unroll"] == FAST and pick.values["parallel_loops"] == 2


def test_model_cache_ignores_a_damaged_entry(tmp_path, caplog):
    cache = ModelCache(tmp_path)
    cache.store("m", b"payload")
    assert cache.load("m") == b"payload"
    path = cache.path("m")
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING):
        assert cache.load("m") is None
    assert "damaged" in caplog.text
    path.write_bytes(path.read_bytes()[:10])  # cut short
    assert cache.load("m") is None
    assert cache.load("absent") is None
    with pytest.raises(ValueError):
        cache.path("../escape")


def test_predictor_retrains_over_a_damaged_cache_entry(tmp_path):
    records = synthetic_records([(8, 32), (64, 64), (16, 128)])
    space = _space()
    first = TransferPredictor(records, ModelCache(tmp_path))
    want = first.pick("relu|32x256|float32|ab", "llvm", ("cpu_generic",), space, space.get(0))
    (entry,) = list(tmp_path.glob("*.bin"))
    entry.write_bytes(entry.read_bytes()[:-5] + b"xxxxx")  # damaged in place, checksum now wrong
    second = TransferPredictor(records, ModelCache(tmp_path))
    assert second.pick("relu|32x256|float32|ab", "llvm", ("cpu_generic",), space, space.get(0)) == want
    assert ModelCache(tmp_path).load(entry.stem) is not None  # rewritten whole


def test_a_valid_but_foreign_entry_is_retrained_not_loaded(tmp_path):
    records = synthetic_records([(8, 32), (64, 64)])
    pred = TransferPredictor(records, ModelCache(tmp_path))
    pred.model("llvm", ("cpu_generic",))
    (entry,) = list(tmp_path.glob("*.bin"))
    ModelCache(tmp_path).store(entry.stem, b"\x05\x00\x00\x00{bad}not a model")
    fresh = TransferPredictor(records, ModelCache(tmp_path))
    assert fresh.model("llvm", ("cpu_generic",)) is not None


def _relu_graph(shape=(24, 40)):
    b = GraphBuilder()
    x = b.input("x", shape)
    return b.build(b.relu(x, name="out"))


def test_untuned_build_takes_the_models_pick(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    log = Database(tmp_path / "log.jsonl")
    log.append_many(synthetic_records([(8, 32), (64, 64), (16, 128)]))
    cg = tefuse.build(_relu_graph(), "llvm", db=log, options=BuildOptions(transfer=True))
    (k,) = cg.kernels
    assert k.template == "cpu_generic" and k.config_source == "predicted"
    space = _space()
    assert space.get(k.config_index).values["unroll"] == FAST
    x = np.random.default_rng(0).standard_normal((24, 40)).astype("float32")
    np.testing.assert_allclose(cg.run(x=x)[0], np.maximum(x, 0))


def test_the_option_turns_the_model_off(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    log = Database(tmp_path / "log.jsonl")
    log.append_many(synthetic_records([(8, 32), (64, 64), (16, 128)]))
    for options in (BuildOptions(transfer=False), BuildOptions()):  # off by default
        (k,) = tefuse.build(_relu_graph(), "llvm", db=log, options=options).kernels
        assert k.config_source == "fallback" and k.config_index == 0
    no_db = tefuse.build(_relu_graph(), "llvm", options=BuildOptions(transfer=True))
    assert no_db.kernels[0].config_source == "fallback"


def test_transfer_option_keys_nothing_and_reads_the_environment():
    assert BuildOptions(transfer=True).changed() == {}  # kernel cache keys and records unchanged
    assert BuildOptions.from_env({"TEFUSE_TRANSFER": "1"}).transfer is True
    assert BuildOptions.from_env({"TEFUSE_TRANSFER": "0"}).transfer is False
    assert BuildOptions.from_env({}).transfer is False


def test_a_record_of_the_workload_still_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    g = _relu_graph()
    from tefuse.fusion import fuse_graph
    from tefuse.fusion.workload import workload_key
    key = workload_key(fuse_graph(g)[0])
    log = Database(tmp_path / "log.jsonl")
    log.append_many(synthetic_records([(8, 32), (64, 64), (16, 128)]))
    log.append(TuningRecord(key, "llvm", "cpu", "cpu_generic", {"parallel_loops": 1, "unroll": 0,
                                                                 "unroll_explicit": 0}, 9, [1e-6]))
    (k,) = tefuse.build(g, "llvm", db=log, options=BuildOptions(transfer=True)).kernels
    assert k.config_source == "tuned" and k.config_index == 9


def test_a_predicted_config_that_does_not_apply_gives_way_to_the_fallback(tmp_path, monkeypatch):
    import tefuse.codegen.schedule as S
    from tefuse.errors import BuildError

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    real = S.apply_schedule

    def refuse_predicted(lowered, target, choice):
        if choice.source == "predicted":
            raise BuildError(f"{lowered.group.name}: refused for the test")
        return real(lowered, target, choice)

    monkeypatch.setattr(S, "apply_schedule", refuse_predicted)
    log = Database(tmp_path / "log.jsonl")
    log.append_many(synthetic_records([(8, 32), (64, 64), (16, 128)]))
    (k,) = tefuse.build(_relu_graph(), "llvm", db=log, options=BuildOptions(transfer=True)).kernels
    assert k.config_source == "fallback" and k.config_index == 0
