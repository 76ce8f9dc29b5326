"""Tuning records: one measured (workload, target, config) per JSON line.

A record is the unit of the performance database: tuners append one per measurement,
build reads back the best. Records are self-describing (template, config values *and*
index, versions, device) so a log stays readable after the space definition changes: build
re-derives the config from the values, and the index is only a hint for resuming.
"""
from __future__ import annotations

import json
import math
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Optional

#: The failure kinds a measurement can end in; `error=None` means it ran and was correct.
ERRORS = ("compile_error", "runtime_error", "timeout", "wrong_result")

#: The least believable median time of a kernel (seconds): 0 or 1e-300 is a broken measurement.
MIN_COST = 1e-9

_REQUIRED = {"workload": str, "target": str, "template": str, "config": dict, "config_index": int}


def _tefuse_version() -> str:
    from ..version import __version__

    return __version__


def _tvm_version() -> str:
    tvm = sys.modules.get("tvm")
    if tvm is None:  # records are plain data: don't pay for importing TVM just to make one
        try:
            from importlib.metadata import version

            return version("apache-tvm")
        except Exception:  # noqa: BLE001 - not installed as a distribution
            return "unknown"
    return str(tvm.__version__)


def _jsonable(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if hasattr(v, "item") and callable(v.item):  # numpy scalars from a tuner's arrays
        return v.item()
    return v


def _config_value_ok(v: Any) -> bool:
    if isinstance(v, bool):
        return True
    if isinstance(v, (int, str)):
        return True
    if isinstance(v, (list, tuple)):
        return len(v) > 0 and all(isinstance(x, int) and not isinstance(x, bool) for x in v)
    return False


@dataclass
class TuningRecord:
    """One measurement of one config of one template on one workload and device.

    `costs` are seconds per run (empty when the measurement failed); `error` is None or
    one of ERRORS, with the detail in `error_msg`.
    """

    workload: str
    target: str
    device: str
    template: str
    config: dict
    config_index: int
    costs: list[float] = field(default_factory=list)
    error: Optional[str] = None
    error_msg: Optional[str] = None
    # the build options it was measured under (BuildOptions.changed(): only those off their
    # default); it replays only under the same ones. Empty, and not written, for the defaults
    options: dict = field(default_factory=dict)
    # the workload's structure (fusion.workload.structure_key): build takes the record for a
    # kernel that differs only in its folded constants. None, and not written, in older records
    structure: Optional[str] = None
    tefuse_version: str = field(default_factory=_tefuse_version)
    tvm_version: str = field(default_factory=_tvm_version)
    timestamp: float = field(default_factory=time.time)

    @property
    def ok(self) -> bool:
        """Ran, gave the right result and has finite timings: only such a record can be best."""
        return (self.error is None and len(self.costs) > 0
                and all(math.isfinite(c) and c >= 0 for c in self.costs))

    def unusable_reason(self) -> Optional[str]:
        """Why an ok record cannot be applied (None: it can): implausible cost, config values
        of the wrong types. Unknown templates are checked by the database (it knows them)."""
        if not self.ok:
            return self.error or "no costs"
        if not statistics.median(self.costs) >= MIN_COST:
            return f"median cost {statistics.median(self.costs):g}s is below {MIN_COST:g}s"
        if self.config_index < 0:
            return f"config_index {self.config_index} is negative"
        for k, v in self.config.items():
            if not _config_value_ok(v):
                return f"config value {k}={v!r} is not an int, string or list of ints"
        return None

    @property
    def mean_cost(self) -> float:
        return statistics.fmean(self.costs) if self.ok else math.inf

    @property
    def median_cost(self) -> float:
        """What best() ranks by: the median shrugs off one slow, noisy repeat."""
        return statistics.median(self.costs) if self.ok else math.inf

    def to_json(self) -> str:
        """One line of strict JSON (no NaN/Infinity), no trailing newline."""
        d = asdict(self)
        d["config"] = _jsonable(self.config)
        d["costs"] = [float(c) for c in self.costs]
        if not self.options:
            del d["options"]
        if self.structure is None:
            del d["structure"]
        return json.dumps(d, separators=(",", ":"), allow_nan=False)

    @classmethod
    def from_json(cls, line: str) -> "TuningRecord":
        """Parse one line; ValueError names what is wrong (callers skip such lines)."""
        try:
            d = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"not JSON: {e}") from None
        if not isinstance(d, dict):
            raise ValueError(f"expected a JSON object, got {type(d).__name__}")
        for k, typ in _REQUIRED.items():
            if k not in d:
                raise ValueError(f"missing field {k!r}")
            if not isinstance(d[k], typ) or (typ is int and isinstance(d[k], bool)):
                raise ValueError(f"field {k!r} should be {typ.__name__}, got {type(d[k]).__name__}")
        costs = d.get("costs", [])
        if not isinstance(costs, list) or not all(
                isinstance(c, (int, float)) and not isinstance(c, bool) for c in costs):
            raise ValueError("field 'costs' should be a list of numbers")
        for k in ("error", "error_msg"):
            if d.get(k) is not None and not isinstance(d[k], str):
                raise ValueError(f"field {k!r} should be a string or null")
        ts = d.get("timestamp", 0.0)
        if not isinstance(ts, (int, float)) or isinstance(ts, bool):
            raise ValueError("field 'timestamp' should be a number")
        structure = d.get("structure")
        if structure is not None and not isinstance(structure, str):
            raise ValueError("field 'structure' should be a string")
        options = d.get("options", {})
        if not isinstance(options, dict) or not all(isinstance(v, bool) for v in options.values()):
            raise ValueError("field 'options' should be an object of true/false build options")
        return cls(workload=d["workload"], target=d["target"], device=str(d.get("device", "unknown")),
                   template=d["template"], config=d["config"], config_index=d["config_index"],
                   costs=[float(c) for c in costs], error=d.get("error"), error_msg=d.get("error_msg"),
                   options=options, structure=structure, tefuse_version=str(d.get("tefuse_version", "unknown")),
                   tvm_version=str(d.get("tvm_version", "unknown")), timestamp=float(ts))

    def summary(self) -> str:
        """Short human line for logs and `tefuse db`."""
        what = f"{self.median_cost * 1e3:.4f} ms" if self.ok else f"{self.error or 'no costs'}"
        return f"{self.template} #{self.config_index} on {self.device}: {what}"
