"""KNOB=VALUE from the command line."""
from __future__ import annotations

import argparse

import pytest

from tefuse.tune.knobs import knob_assignment


def test_knob_assignment_parses_json_values_and_words():
    assert knob_assignment("stages=2") == ("stages", 2)
    assert knob_assignment("tile=[64,128,32,64]") == ("tile", [64, 128, 32, 64])
    assert knob_assignment("intrin=wgmma") == ("intrin", "wgmma")
    with pytest.raises(argparse.ArgumentTypeError, match="KNOB=VALUE"):
        knob_assignment("wgmma")
