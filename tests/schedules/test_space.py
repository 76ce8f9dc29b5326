"""Config spaces: a hand-narrowed space keeps its indices and refuses what it narrows away."""
from __future__ import annotations

import argparse

import pytest

from tefuse.schedules.space import ConfigSpace, knob_assignment


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


def test_knob_assignment_parses_json_values_and_words():
    assert knob_assignment("stages=2") == ("stages", 2)
    assert knob_assignment("tile=[64,128,32,64]") == ("tile", [64, 128, 32, 64])
    assert knob_assignment("intrin=wgmma") == ("intrin", "wgmma")
    with pytest.raises(argparse.ArgumentTypeError, match="KNOB=VALUE"):
        knob_assignment("wgmma")
