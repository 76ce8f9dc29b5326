"""The calibration options of `build`, `run` and `tune` (--precision int8 or fp8): where the scales
come from (a saved calibration, or sample inputs calibrated here), the calibrator, and which
products stay float."""
from __future__ import annotations

import argparse
import logging
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Union

from . import UsageError

if TYPE_CHECKING:
    from ..graph.calibration import Calibration
    from ..graph.ir import Graph

log = logging.getLogger(__name__)

# graph/calibration.py's METHODS, spelled here so that `--help` loads neither TVM nor numpy
CALIBRATORS = ("entropy", "max", "percentile")


def add_calibration_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--calibration", metavar="FILE",
                   help="--precision int8 or fp8: sample inputs (.npz, one array per model input with the samples "
                        "along a new first axis) to calibrate on, or a calibration saved by --save-calibration "
                        "(.json)")
    p.add_argument("--calibrator", default="entropy", choices=CALIBRATORS,
                   help="how an activation's quantized range is chosen from the samples (default entropy, as "
                        "TensorRT's; max, percentile)")
    p.add_argument("--percentile", type=float, default=99.99, help="the percentile calibrator's (default 99.99)")
    p.add_argument("--pin", action="append", default=[], metavar="NODE",
                   help="a conv / matmul / dense that stays float, or a residual add whose projection shortcut "
                        "does (pinning the shortcut's conv does both) (repeatable)")
    p.add_argument("--pin-above", type=float, default=None, metavar="REL",
                   help="measure each product's error with it alone quantized on the samples (a report in the "
                        "log) and keep those above this relative error float (products only: shortcuts follow "
                        "their conv)")
    p.add_argument("--float-residuals", action="store_true",
                   help="residual adds read their shortcut in float, not as its codes (each block's output is then "
                        "stored twice: the float value and its codes)")
    p.add_argument("--save-calibration", metavar="FILE", help="write the calibration (JSON) for later builds")


def _samples(path: Path, graph: "Graph") -> list[dict]:
    import numpy as np

    try:
        data = dict(np.load(path))
    except (OSError, ValueError) as e:
        raise UsageError(f"--calibration {path}: cannot read the samples ({e})") from None
    names = [i.name for i in graph.inputs]
    missing = [n for n in names if n not in data]
    if missing:
        raise UsageError(f"--calibration {path}: no samples for input(s) {missing} (it holds {sorted(data)})")
    counts = {n: data[n].shape[0] if data[n].ndim else 0 for n in names}
    if len(set(counts.values())) != 1 or not next(iter(counts.values())):
        raise UsageError(f"--calibration {path}: each input needs the same number of samples along the first "
                         f"axis, got {counts}")
    for i in graph.inputs:
        if tuple(data[i.name].shape[1:]) != tuple(i.shape):
            raise UsageError(f"--calibration {path}: input {i.name!r} samples are {data[i.name].shape[1:]}, "
                             f"the model takes {tuple(i.shape)}")
    return [{n: data[n][k] for n in names} for k in range(counts[names[0]])]


def calibration_for(args, graph: Union["Graph", Mapping[int, "Graph"], None]) -> "Calibration":
    """The calibration --calibration names (loaded, or made from its samples; once per command)."""
    from ..graph.calibration import Calibration

    found = getattr(args, "calibration_found", None)
    if found is not None:
        return found
    if not args.calibration:
        raise UsageError(f"--precision {args.precision} needs --calibration (sample inputs .npz, or a saved .json)")
    path = Path(args.calibration)
    if path.suffix == ".json":
        try:
            cal = Calibration.from_json(path.read_text(), str(path))
        except OSError as e:
            raise UsageError(f"--calibration {path}: {e.strerror}") from None
        cal = cal.pin(args.pin)
    else:
        from ..calibrate import calibrate, layer_errors, pin_worst

        if isinstance(graph, Mapping):  # batch profiles: calibrated on the one the samples fit
            graph = next(iter(graph.values()))
        if graph is None:
            raise UsageError("this command takes a saved calibration (.json) only")
        samples = _samples(path, graph)
        cal = calibrate(graph, samples, args.calibrator, args.percentile, pin=args.pin)
        if args.pin_above is not None:
            errors = layer_errors(graph, cal, samples, args.precision)
            for e in errors:
                log.info("%s %s: relative error %.3g", args.precision, e.product, e.relative)
            cal = pin_worst(cal, errors, args.pin_above)
    if args.float_residuals:
        cal = replace(cal, residuals=False)
    if args.save_calibration:
        Path(args.save_calibration).write_text(cal.to_json() + "\n")
        log.info("calibration written to %s", args.save_calibration)
    args.calibration_found = cal
    return cal
