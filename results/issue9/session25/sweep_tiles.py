"""Experiment (not part of tefuse): session 22's split_tiles.py runner (through session 24's
wrapper, which adds 6- and 8-stage configs) with the stage counts and tiles the untuned rule
does not take today, to set each b16 conv's current pick beside its neighbours in one run.

    python sweep_tiles.py --shapes 5 7 2 --splits 1 --configs 128x128s3 128x128s2 --json out.json
"""
import importlib.util
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location("split_tiles24", Path(__file__).parents[1] / "session24" / "split_tiles.py")
wrapper = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wrapper)
runner = wrapper.runner
runner.CONFIGS.update({
    "128x128s1": ((128, 128, 64, 64), 1),
    "128x128s2": ((128, 128, 64, 64), 2),
    "64x128s2": ((64, 128, 32, 64), 2),
    "64x128s3": ((64, 128, 32, 64), 3),
    "256x128s2": ((256, 128, 64, 64), 2),
    "128x256s2": ((128, 256, 64, 64), 2),
})

if __name__ == "__main__":
    sys.exit(runner.main())
