"""Experiment (session 26): sliced K (schedules/cuda/sliced_k.py and the `slices` knob at 39d3652, reverted
after this run) on the conv
bench's b16 cases, through session 22's split_tiles.py runner (built in parallel workers, then each
checked against float64 torch and timed beside cuDNN in one process). A config name ending in kS
takes S slices: 64x64s4k2 is 64x64 blocks, 4 stages, two warpgroups each taking half of K.

    python sliced_k.py --shapes 12 9 8 11 --splits 1 --configs 64x64s4 64x64s4k2 --json out.json
"""
import importlib.util
import re
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location("split_tiles22", Path(__file__).parents[1] / "session22" / "split_tiles.py")
runner = importlib.util.module_from_spec(_spec)
sys.modules["split_tiles22"] = runner  # the build workers unpickle its functions by this name
_spec.loader.exec_module(runner)
runner.CONFIGS.update({"64x64s6": ((64, 64, 32, 32), 6), "64x128s6": ((64, 128, 32, 64), 6),
                       "128x64s3": ((128, 64, 64, 32), 3)})
_plain_db = runner._db


def _db(name: str):
    m = re.fullmatch(r"(.+)k(\d+)", name)
    forced = _plain_db(m.group(1) if m else name)
    forced.values["slices"] = int(m.group(2)) if m else 1
    return forced


runner._db = _db
_plain_legal = runner._legal
runner._legal = lambda shape, split, cfg: _plain_legal(shape, split, re.sub(r"k\d+$", "", cfg))

if __name__ == "__main__":
    sys.exit(runner.main())
