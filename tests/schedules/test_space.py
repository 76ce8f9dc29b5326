"""Config spaces: a hand-narrowed space keeps its indices and refuses what it narrows away."""
from __future__ import annotations

import pytest

from tefuse.schedules.space import ConfigSpace


def _space() -> ConfigSpace:
    s = ConfigSpace()
    s.define_knob("tile", [(64, 64), (128, 64)])
    s.define_knob("stages", [1, 2, 3])
    return s


def test_restricted_admits_only_the_given_values_at_the_same_indices():
    s = _space()
    r = s.restricted({"tile": [128, 64], "stages": 2})  # a list, as JSON gives it
    admitted = [i for i in range(len(r)) if r.admits(i)]
    assert admitted == [s.index_of({"tile": (128, 64), "stages": 2})]
    assert all(s.admits(i) for i in range(len(s)))  # the original is untouched


@pytest.mark.parametrize("only, msg", [({"bk": 32}, "no knob 'bk'"), ({"stages": 5}, "stages=5"),
                                       ({"stages": True}, "stages=True")])  # JSON true is not stage 1
def test_restricted_names_what_it_cannot_narrow(only, msg):
    with pytest.raises(ValueError, match=msg):
        _space().restricted(only)


def test_find_places_a_config_by_its_values_or_says_it_no_longer_fits():
    s = _space()
    assert s.find({"tile": [128, 64], "stages": 3}) == s.index_of({"tile": (128, 64), "stages": 3}) == 5
    assert s.find({"tile": (64, 64), "stages": 6}) is None  # a value the space does not offer
    assert s.find({"tile": (64, 64)}) is None  # a knob the record lacks


def test_a_knob_added_later_is_implied_at_its_first_value_in_older_records():
    s = _space()
    s.define_knob("vector", [False, True], implied_first=True)
    assert s.get(s.find({"tile": (64, 64), "stages": 2}))["vector"] is False  # a record from before it
    assert s.get(s.find({"tile": (64, 64), "stages": 2, "vector": True}))["vector"] is True
    assert s.find({"tile": (64, 64)}) is None  # a knob defined without implied_first still must be there
