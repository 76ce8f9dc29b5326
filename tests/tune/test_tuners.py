"""Config spaces and tuners, without compiling anything (synthetic costs)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from tefuse.tune.features import Featurizer
from tefuse.schedules.space import ConfigSpace
from tefuse.tune.tuners import GridTuner, RandomTuner, XGBTuner, make_tuner


def conv_like_space() -> ConfigSpace:
    """The shape of conv2d_direct's space for a 64x56x56 output (millions of points)."""
    s = ConfigSpace()
    for k, e in enumerate((64, 56, 56)):
        s.define_split(f"tile_{k}", e, 4, filter=lambda c: c[1] <= 4 and c[2] <= 32 and c[3] <= 8)
    s.define_split("tile_rc", 64, 2, filter=lambda c: c[1] <= 32)
    s.define_knob("unroll", [0, 512, 1500])
    s.define_knob("unroll_explicit", [1, 0])
    return s


def small_space() -> ConfigSpace:
    s = ConfigSpace()
    s.define_split("t", 16, 2)
    s.define_knob("u", [0, 16, 64])
    return s  # 5 x 3 = 15 points


def synthetic_cost(space: ConfigSpace):
    """Smooth in the log of threads / per-thread work, like a real GPU conv: best at 128
    threads and 16 outputs per thread."""
    def cost(i: int) -> float:
        c = space.get(i)
        thr = math.prod(c[f"tile_{k}"][2] for k in range(3))
        inner = math.prod(c[f"tile_{k}"][3] for k in range(3))
        return (1.0 + (math.log2(thr) - 7) ** 2 + 0.5 * (math.log2(inner) - 4) ** 2
                + 0.3 * (math.log2(c["tile_rc"][1]) - 3) ** 2 + (0.5 if c["unroll"] == 0 else 0.0))
    return cost


def test_space_is_deterministic_and_round_trips():
    a, b = conv_like_space(), conv_like_space()
    assert len(a) == len(b) > 1_000_000
    assert a.dims() == b.dims()
    rng = np.random.default_rng(0)
    for i in rng.integers(0, len(a), 50).tolist():
        assert a.get(i).values == b.get(i).values
        assert a.index_of(a.get(i).values) == i
        assert a.index_of(a.get(i).to_json()) == i  # JSON lists back to tuples
        assert a.index_of_point(a.point(i)) == i
    with pytest.raises(IndexError):
        a.get(len(a))


@pytest.mark.parametrize("name", ["random", "grid", "xgb"])
def test_tuners_propose_valid_unique_indices_and_exhaust_small_space(name):
    space = small_space()
    tuner = make_tuner(name, space, seed=3, **({"min_train": 4, "sa_chains": 16, "sa_steps": 10}
                                                 if name == "xgb" else {}))
    seen: list[int] = []
    while tuner.has_next():
        batch = tuner.next_batch(4)
        assert batch, "has_next() but nothing proposed"
        assert all(isinstance(i, int) and 0 <= i < len(space) for i in batch)
        tuner.update(batch, [1.0 + (space.get(i)["t"][0] - 4) ** 2 for i in batch])
        seen += batch
    assert sorted(seen) == list(range(len(space)))
    assert tuner.next_batch(4) == []


@pytest.mark.parametrize("name", ["random", "grid", "xgb"])
def test_tuners_skip_what_the_space_rules_out_without_a_trial(name):
    """A rule (u == 64 needs t's inner factor >= 4): the tuners propose every admitted config once
    and none of the others, which never reach a measurement; the indices stay the same."""
    space = small_space()
    before = [space.get(i).values for i in range(len(space))]
    space.constrain(lambda v: v["u"] != 64 or v["t"][1] >= 4)
    admitted = [i for i in range(len(space)) if space.admits(i)]
    assert 0 < len(admitted) < len(space) and [space.get(i).values for i in range(len(space))] == before
    tuner = make_tuner(name, space, seed=5, **({"min_train": 4, "sa_chains": 16, "sa_steps": 10}
                                                 if name == "xgb" else {}))
    seen: list[int] = []
    while tuner.has_next():
        batch = tuner.next_batch(3)
        tuner.update(batch, [1.0 + space.get(i)["t"][0] for i in batch])
        seen += batch
    assert sorted(seen) == admitted


def test_tuners_are_deterministic_with_a_seed():
    space = conv_like_space()
    cost = synthetic_cost(space)
    runs = []
    for _ in range(2):
        t = XGBTuner(space, seed=7, sa_chains=32, sa_steps=20)
        got = []
        for _ in range(3):
            b = t.next_batch(8)
            t.update(b, [cost(i) for i in b])
            got += b
        runs.append(got)
    assert runs[0] == runs[1]
    assert RandomTuner(space, seed=1).next_batch(5) == RandomTuner(space, seed=1).next_batch(5)
    assert GridTuner(space).next_batch(3) == [0, 1, 2]


def test_failures_are_never_best():
    t = RandomTuner(small_space())
    t.update([0, 1, 2], [math.inf, 2.0, float("nan")])
    assert t.best_index == 1 and t.best_cost == 2.0


def _trials_to_reach(name: str, seed: int, threshold: float, budget: int) -> int:
    space = conv_like_space()
    cost = synthetic_cost(space)
    t = make_tuner(name, space, seed=seed, **({"sa_chains": 64, "sa_steps": 40} if name == "xgb" else {}))
    n = 0
    while n < budget:
        b = t.next_batch(8)
        t.update(b, [cost(i) for i in b])
        n += len(b)
        if t.best_cost <= threshold:
            return n
    return budget * 2  # not reached: penalised


def test_xgb_finds_good_configs_faster_than_random():
    space = conv_like_space()
    cost = synthetic_cost(space)
    rng = np.random.default_rng(123)
    sample = np.array([cost(int(i)) for i in rng.integers(0, len(space), 3000)])
    median, good = float(np.median(sample)), float(np.quantile(sample, 0.01))
    seeds = range(4)
    xgb = [_trials_to_reach("xgb", s, good, 96) for s in seeds]
    rnd = [_trials_to_reach("random", s, good, 96) for s in seeds]
    assert np.mean(xgb) < np.mean(rnd), (xgb, rnd)
    # and better than the median config within a small budget, every seed
    for s in seeds:
        assert _trials_to_reach("xgb", s, median, 32) <= 32


def test_transfer_learning_seeds_the_model_before_any_measurement():
    space = conv_like_space()
    cost = synthetic_cost(space)
    rng = np.random.default_rng(5)
    # records of "another workload" of the same template: same knobs, same cost landscape
    other = [(space.get(int(i)).to_json(), cost(int(i)) * 1e-4, "other|wl")
             for i in rng.integers(0, len(space), 200)]
    t = XGBTuner(space, seed=0, sa_chains=64, sa_steps=40)
    t.load_transfer(other)
    first = t.next_batch(8)  # proposed by the model: no own data yet
    base = RandomTuner(space, seed=0).next_batch(8)
    assert np.mean([cost(i) for i in first]) < np.mean([cost(i) for i in base])


def test_featurizer_values_match_points():
    space = conv_like_space()
    f = Featurizer(space)
    idx = [0, 12345, len(space) - 1]
    by_points = f.indices(idx)
    by_values = np.stack([f.values(space.get(i).to_json()) for i in idx])
    np.testing.assert_allclose(by_points, by_values)
    assert f.values({"unknown": 1}) is None


def test_featurizer_gives_a_record_from_before_an_implied_knob_its_first_value():
    from tefuse.schedules.space import ConfigSpace

    space = ConfigSpace()
    space.define_knob("threads", [256, 128])
    space.define_knob("vector", [False, True], implied_first=True)
    f = Featurizer(space)
    old = f.values({"threads": 128})  # written before the knob
    np.testing.assert_allclose(old, f.values({"threads": 128, "vector": False}))
    assert not np.allclose(old, f.values({"threads": 128, "vector": True}))
    assert f.values({"vector": True}) is None  # a knob without implied_first must be there
