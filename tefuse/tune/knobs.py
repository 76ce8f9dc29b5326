"""KNOB=VALUE as a user types it (`tefuse tune --only`, the precision bench's `--only`). Apart
from the knob spaces (schedules/space.py), so that parsing a command line loads no template."""
from __future__ import annotations

import argparse
import json
from typing import Any


def knob_assignment(text: str) -> tuple[str, Any]:
    """KNOB=VALUE as a user types it (`tefuse tune --only`): VALUE as JSON when it parses
    (numbers, lists), else the word itself."""
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected KNOB=VALUE, got {text!r}")
    try:
        return name, json.loads(value)
    except json.JSONDecodeError:
        return name, value
