"""Experiment (not part of tefuse): session 22's split_tiles.py runner with the configs session 24
added (6 and 8 stages, which the tensor-core stage knob takes since 77a60f7). Same arguments.

    python split_tiles.py --shapes 12 9 8 11 --splits 1 --configs 64x64s4 64x64s8 --json out.json
"""
import importlib.util
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location("split_tiles22", Path(__file__).parents[1] / "session22" / "split_tiles.py")
runner = importlib.util.module_from_spec(_spec)
sys.modules["split_tiles22"] = runner  # the build workers (forked) unpickle its functions by this name
_spec.loader.exec_module(runner)
runner.CONFIGS.update({
    "64x128s6": ((64, 128, 32, 64), 6),
    "64x128s8": ((64, 128, 32, 64), 8),
    "64x64s6": ((64, 64, 32, 32), 6),
    "64x64s8": ((64, 64, 32, 32), 8),
    "128x128s6": ((128, 128, 64, 64), 6),
})

if __name__ == "__main__":
    sys.exit(runner.main())
