"""What travels between tuner, builder and runner, and the measuring of one module.

Build and run are split (AutoTVM's design) because building is CPU-bound and parallel,
while timing must be serial on the device. Everything here is plain data that pickles, so
it can cross into worker processes: the func travels as TVMScript, inputs as numpy.
"""
from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

log = logging.getLogger(__name__)

COMPILE_ERROR = "compile_error"
RUNTIME_ERROR = "runtime_error"
TIMEOUT = "timeout"
WRONG_RESULT = "wrong_result"

# (rtol, atol relative to the reference's largest magnitude): tiling reorders reductions
TOLERANCES = {"float64": (1e-7, 1e-9), "float32": (1e-3, 1e-4), "float16": (1e-2, 1e-3),
              "bfloat16": (3e-2, 1e-2)}


def tolerance(dtype: str, rounding: Optional[str] = None) -> tuple[float, float]:
    """(rtol, atol) an output of `dtype` is checked with, no tighter than `rounding`'s: the
    narrowest float type the kernel computes (RunSpec.rounding, `rounding_of`). A float32 output
    computed through float16 values carries float16's rounding (BERT's residual adds are float16,
    then cast to float32 for the LayerNorm): two configs that sum in another order differ there
    by float16 ulps, which float32's tolerance called wrong results."""
    rtol, atol = TOLERANCES.get(dtype, (1e-3, 1e-4))
    if rounding in TOLERANCES:
        rtol, atol = max(rtol, TOLERANCES[rounding][0]), max(atol, TOLERANCES[rounding][1])
    return rtol, atol


@dataclass
class BuildResult:
    """One candidate after building: the exported library, or why there is none."""

    index: int
    config: dict
    path: Optional[str] = None
    error: Optional[str] = None
    error_msg: Optional[str] = None
    build_seconds: float = 0.0
    features: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None and self.path is not None


@dataclass
class MeasureResult:
    """One candidate after running: per-repeat costs in seconds, or an error kind."""

    index: int
    config: dict
    costs: list[float] = field(default_factory=list)
    error: Optional[str] = None
    error_msg: Optional[str] = None

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.costs)

    @property
    def cost(self) -> float:
        """Median cost; inf for a failure, so a failing candidate never wins."""
        return float(np.median(self.costs)) if self.ok else math.inf


@dataclass
class ArgSpec:
    shape: tuple
    dtype: str
    value: Optional[np.ndarray] = None  # a graph constant's real value (BN variance > 0...)


@dataclass
class RunSpec:
    """How to call a task's kernel: argument shapes, constant values, the input seed."""

    key: str
    args: list[ArgSpec]
    outputs: list[ArgSpec]
    seed: int = 0
    target: Optional[dict] = None  # the task's (exported): what an output check on a server is built for
    rounding: Optional[str] = None  # the kernel's narrowest float value (`rounding_of`): its check's least tolerance

    def inputs(self) -> list[np.ndarray]:
        # positive inputs: chains may take sqrt/log of runtime operands (BN variance as input)
        rng = np.random.default_rng(self.seed)
        out = []
        for a in self.args:
            if a.value is not None:
                out.append(np.asarray(a.value, dtype=a.dtype, order="C"))  # 0-d stays 0-d
            elif a.dtype.startswith(("int", "uint")):
                out.append(rng.integers(0, 4, size=a.shape).astype(a.dtype))
            elif a.dtype == "bool":
                out.append(rng.random(a.shape) < 0.5)
            else:
                out.append(rng.uniform(0.1, 1.0, size=a.shape).astype(a.dtype))
        return out


def check_kinds(specs) -> list[tuple[str, int, object]]:
    """The (type, rank, target) of every output of `specs`, each once: what a run's output checks
    take, known before its first candidate (an RPC server's counters, remote_check.py)."""
    seen: dict = {}
    for spec in specs:
        for o in spec.outputs:
            seen.setdefault((o.dtype, len(o.shape), json.dumps(spec.target, sort_keys=True, default=str)),
                            (o.dtype, len(o.shape), spec.target))
    return list(seen.values())


def rounding_of(group) -> Optional[str]:
    """The narrowest float type (by TOLERANCES) among the values a group computes, its outputs
    and intermediates: the least tolerance its outputs are checked with (`tolerance`). Its
    inputs do not count: every config reads them the same. None where it computes no float."""
    floats = [n.dtype for n in group.nodes if n.is_op and n.dtype in TOLERANCES]  # (its outputs among them)
    return max(floats, key=lambda d: TOLERANCES[d], default=None)


def run_spec(task, seed: int = 0) -> RunSpec:
    from ..graph.ir import CONST

    args = [ArgSpec(tuple(p.shape), p.dtype, p.value if p.op == CONST else None) for p in task.lowered.params]
    outs = [ArgSpec(tuple(o.shape), o.dtype) for o in task.group.outputs]
    return RunSpec(task.workload, args, outs, seed, task.target.export(), rounding_of(task.group))


@dataclass
class RunOptions:
    number: int = 0  # 0: let min_repeat_ms decide
    repeat: int = 3
    min_repeat_ms: int = 20
    check: bool = True


def output_scale(ref: np.ndarray) -> float:
    """A reference output's largest finite magnitude (1 for none, or an integer output): the
    tolerance's absolute part is relative to it."""
    if ref.dtype.kind in "iub":  # (ml_dtypes' bfloat16 is kind "V": a float)
        return 1.0
    finite = np.isfinite(ref)
    return float(np.abs(ref[finite].astype(np.float64)).max()) if finite.any() else 1.0


def bounds(ref: np.ndarray, rounding: Optional[str] = None) -> tuple[float, float]:
    """(atol, rtol) a float output is checked against its reference `ref` with: np.isclose's
    absolute part scaled by the reference's magnitude (`output_scale`), `tolerance`'s."""
    rtol, atol = tolerance(str(ref.dtype), rounding)
    return atol * max(output_scale(ref), 1.0), rtol


def poison_value(dtype: str):
    """What an output holds before a checked run: NaN for floats (the check calls it different
    from any number), the type's lowest value for signed integers, its highest for unsigned ones,
    True for bool. Device memory handed out again keeps the last candidate's right outputs, so
    without it a kernel that leaves part of its output unwritten would pass the check."""
    import ml_dtypes  # its iinfo knows int4 and uint4 besides numpy's integers

    if dtype == "bool":
        return True
    if dtype.startswith("int"):
        return ml_dtypes.iinfo(dtype).min
    if dtype.startswith("uint"):
        return ml_dtypes.iinfo(dtype).max
    return np.nan


def poisoned(specs: list[ArgSpec]) -> list[np.ndarray]:
    """Outputs of these specs, every element `poison_value`."""
    import ml_dtypes  # noqa: F401 - registers bfloat16 and the float8s with numpy

    return [np.full(o.shape, poison_value(o.dtype), dtype=np.dtype(o.dtype)) for o in specs]


def poison_tensors(specs: list[ArgSpec], dev) -> list:
    """`poisoned(specs)` on `dev` (a local or an RPC session's device)."""
    import tvm

    return [tvm.runtime.tensor(a, dev) for a in poisoned(specs)]


def open_device(dev) -> None:
    """The device's first allocation and a sync: its context started (3 s for a GPU's first
    use in a process or RPC session), which a first candidate would otherwise wait for."""
    import tvm

    tvm.runtime.empty((1,), "float32", dev)
    dev.sync()


def check_outputs(got: list[np.ndarray], ref: list[np.ndarray], rounding: Optional[str] = None) -> Optional[str]:
    """None if `got` matches `ref` within the dtype's tolerance (`tolerance`), else what differs."""
    for k, (g, r) in enumerate(zip(got, ref)):
        if g.shape != r.shape:
            return f"output {k}: shape {g.shape} != {r.shape}"
        if g.dtype.kind in "iub":
            if not np.array_equal(g, r):
                return f"output {k}: {int((g != r).sum())} of {g.size} elements differ"
            continue
        atol, rtol = bounds(r, rounding)
        g64, r64 = g.astype(np.float64), r.astype(np.float64)
        close = np.isclose(g64, r64, rtol=rtol, atol=atol, equal_nan=True)
        if not close.all():
            bad = np.argwhere(~close)[0]
            return (f"output {k}: {int((~close).sum())} of {g.size} elements differ, first at "
                    f"{tuple(int(x) for x in bad)}: {g64[tuple(bad)]:.6g} vs {r64[tuple(bad)]:.6g}")
    return None


def measure_module(load: Callable[[], Any], dev, inputs: list, out_specs: list[ArgSpec],
                   ref: Optional[list[np.ndarray]], opts: RunOptions, index: int, config: dict,
                   outputs: Optional[list] = None, check: Optional[Callable] = None,
                   poison: Optional[list] = None, rounding: Optional[str] = None) -> MeasureResult:
    """Load, run once (warm-up and correctness check), then time. Never raises: errors
    become the MeasureResult's error kind. Shared by the local and the RPC runner. `outputs`:
    tensors on `dev` to write the results into (allocated here by default; an RPC slot keeps a
    set a workload, where allocating and freeing them is two round trips each). `check`
    (outputs -> what differs, or None) checks them where they are instead of copying them
    back (the RPC runner: remote_check.py). `poison`: tensors on the device holding `poisoned`
    outputs, copied into the outputs before a checked run (poison_value says why). `rounding`:
    RunSpec.rounding, for the check's tolerance."""
    import tvm

    checked = opts.check and ref is not None
    try:
        mod = load()
        outs = outputs if outputs is not None else [tvm.runtime.empty(o.shape, o.dtype, dev) for o in out_specs]
        for out, src in zip(outs, poison or ()) if checked else ():
            out.copyfrom(src)
        mod["main"](*inputs, *outs)
        dev.sync()
    except Exception as e:  # noqa: BLE001 - launch failures of any kind
        return MeasureResult(index, config, error=RUNTIME_ERROR, error_msg=last_line(e))
    if checked:
        try:
            msg = check(outs) if check else check_outputs([o.numpy() for o in outs], ref, rounding)
        except Exception as e:  # noqa: BLE001 - a session lost while checking
            return MeasureResult(index, config, error=RUNTIME_ERROR, error_msg=last_line(e))
        if msg is not None:
            return MeasureResult(index, config, error=WRONG_RESULT, error_msg=msg)
    try:
        timer = mod.time_evaluator("main", dev, number=opts.number, repeat=opts.repeat,
                                   min_repeat_ms=opts.min_repeat_ms)
        res = timer(*inputs, *outs)
        costs = [float(c) for c in res.results]
    except Exception as e:  # noqa: BLE001
        return MeasureResult(index, config, error=RUNTIME_ERROR, error_msg=last_line(e))
    return MeasureResult(index, config, costs=costs)


def last_line(e: BaseException) -> str:
    lines = [ln for ln in str(e).strip().splitlines() if ln.strip()]
    return (lines[-1] if lines else type(e).__name__)[:500]
