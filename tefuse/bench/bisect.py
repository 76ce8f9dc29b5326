"""Find the first ONNX tensor where a tefuse build departs from onnxruntime.

A whole-model check says only that the output is wrong (or that a kernel failed to launch). This
narrows it to a node, as Polygraphy's layerwise comparison does, without marking every tensor an
output (which would change how the model fuses): the model is cut after a few candidate tensors
(`onnx.utils.Extractor`), the cut model is built and run, and each candidate is compared with
onnxruntime's value of it; the search then continues between the last good candidate and the
first bad one. A model of N nodes takes about log_F(N) builds (F candidates per build).
`tefuse run model.onnx --check --bisect` and the zoo's `--bisect` use it.

A tensor is bad when its error relative to its scale (max |reference|) exceeds the tolerance, when
it is not finite where the reference is, or when the cut model fails to build or run. Candidates
are the node outputs that depend on a model input's values (constants and shape arithmetic are
folded at import, so they are never a kernel of their own, and a search that took them for
evidence would be misled) and whose type onnx's shape inference knows.

The answer is the first bad tensor *of the cut models*: a cut can split a pattern tefuse fuses
(an attention block cut inside its softmax builds unfused), so a fault of a fused pattern shows up
at the pattern's last tensor.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np

log = logging.getLogger(__name__)

FANOUT = 8  # candidates compared per build
# the largest finite value of a build precision's storage type: a value beyond it (a mask's
# finfo(float32).min) is compared as that value, on both sides: a half-precision build clips it
# where it is stored in half, and gives it back whole where a float32 output is computed from it
_FINITE_MAX = {"fp16": float(np.finfo(np.float16).max), "bf16": 3.3895e38}

# ops whose output depends on their input's shape alone: folded at import, like constants
SHAPE_ONLY = frozenset({"Shape", "Size"})

Runner = Callable[[object, dict], list]  # (cut ModelProto, feeds) -> outputs in graph order


@dataclass(frozen=True)
class Divergence:
    """The first tensor found bad, the node that produced it, and why."""

    tensor: str
    node: str
    op_type: str
    error: float  # max |tefuse - onnxruntime| / max |onnxruntime|; inf when not finite or failed
    reason: str
    builds: int  # cut models built to find it

    def line(self) -> str:
        return (f"first divergence at {self.tensor!r} (node {self.node!r}, {self.op_type}): {self.reason} "
                f"[{self.builds} builds]")


@dataclass(frozen=True)
class Candidate:
    tensor: str
    node: str
    op_type: str


def infer(model):
    """`model` with every tensor's type and shape that onnx's shape inference finds."""
    import onnx

    return onnx.shape_inference.infer_shapes(model)


def candidates(inferred) -> list[Candidate]:
    """The node outputs, in the graph's (topological) order, that depend on a model input and
    whose type shape inference knows (`inferred`: the model through `infer`)."""
    g = inferred.graph
    typed = {v.name for v in (*g.value_info, *g.output) if v.type.tensor_type.elem_type}
    init = {t.name for t in g.initializer}
    live = {i.name for i in g.input if i.name not in init}
    out = []
    for k, n in enumerate(g.node):
        if n.op_type in SHAPE_ONLY or not any(i in live for i in n.input if i):
            continue
        for t in n.output:
            if t:
                live.add(t)
                if t in typed:
                    out.append(Candidate(t, n.name or f"#{k}", n.op_type))
    return out


def cut(inferred, outputs: Sequence[str]):
    """The part of a model (through `infer`) that computes `outputs` (they become its outputs,
    in that order)."""
    import onnx.utils

    init = {t.name for t in inferred.graph.initializer}
    inputs = [i.name for i in inferred.graph.input if i.name not in init]
    return onnx.utils.Extractor(inferred).extract_model(inputs, list(outputs))


def tensor_error(got, want, precision: str) -> tuple[float, str]:
    """(error over scale, reason when bad else "") of one tensor against the reference."""
    want = np.asarray(want)
    got = np.asarray(got)
    if got.shape != want.shape and got.size == want.size:
        got = got.reshape(want.shape)
    if got.shape != want.shape:
        return math.inf, f"shape {list(got.shape)}, onnxruntime gives {list(want.shape)}"
    if want.dtype == np.bool_ or np.issubdtype(want.dtype, np.integer):
        wrong = int((got.astype(want.dtype) != want).sum())
        return (math.inf, f"{wrong} of {want.size} values differ") if wrong else (0.0, "")
    g, w = got.astype(np.float64), want.astype(np.float64)
    if precision in _FINITE_MAX:
        w = np.clip(w, -_FINITE_MAX[precision], _FINITE_MAX[precision])
        g = np.clip(g, -_FINITE_MAX[precision], _FINITE_MAX[precision])
    fin = np.isfinite(w)
    if (np.isfinite(g) != fin).any() or (~fin & (g != w) & ~(np.isnan(g) & np.isnan(w))).any():
        bad = int((np.isfinite(g) != fin).sum())
        return math.inf, f"{bad} of {want.size} values not finite where onnxruntime's are (or the reverse)"
    if not fin.any():
        return 0.0, ""
    scale = float(np.abs(w[fin]).max())
    err = float(np.abs(g[fin] - w[fin]).max())
    rel = err / scale if scale > 0 else (math.inf if err > 0 else 0.0)
    return rel, ""


def tefuse_runner(target: str, precision: str = "fp32", db=None, jobs: Optional[int] = None) -> Runner:
    """Import, build for `target` at `precision` and run a cut model."""
    def run(model, feeds: dict) -> list:
        from ..driver import build
        from ..frontend.onnx import import_onnx

        cg = build(import_onnx(model, source="cut model"), target, precision=precision, db=db, jobs=jobs)
        return cg.run(feeds, as_numpy=True)
    return run


def first_divergence(model, feeds: dict, runner: Runner, precision: str = "fp32", tolerance: float = 1e-4,
                     fanout: int = FANOUT) -> Optional[Divergence]:
    """The first candidate tensor where `runner` departs from onnxruntime, or None when every
    candidate matches. `runner` builds and runs a cut model (`tefuse_runner`)."""
    from ..frontend.reference import onnxruntime_outputs

    model = infer(model)
    cands = candidates(model)
    lo, hi = -1, None  # cands[lo] known good (-1: the inputs), cands[hi] known bad
    hi_reason, hi_err = "", math.inf
    builds = 0
    width = fanout
    while hi is None or hi - lo > 1:
        end = len(cands) if hi is None else hi
        if end - lo <= 1:
            break
        span = end - lo - 1
        k = min(width, span)
        # spread over (lo, hi) exclusive of a known-bad hi; the last candidate included while none is known bad
        picks = sorted({lo + (hi - lo) * (j + 1) // (k + 1) for j in range(k)} if hi is not None
                       else {lo + span * (j + 1) // k for j in range(k)})
        sub = cut(model, [cands[p].tensor for p in picks])
        want = onnxruntime_outputs(sub, feeds)
        builds += 1
        try:
            got = runner(sub, feeds)
        except Exception as ex:  # noqa: BLE001 - a failing cut is a finding, narrowed like a wrong value
            if len(picks) > 1:
                width = 1  # which of them fails is unknown: go on one candidate at a time
                log.info("cut at %d tensors failed (%s); narrowing one at a time", len(picks), ex)
                continue
            hi, hi_err, hi_reason = picks[0], math.inf, f"build or run failed: {str(ex).strip().splitlines()[0]}"
            log.info("cut at %s fails", cands[hi].tensor)
            continue
        for p, g, w in zip(picks, got, want):
            err, why = tensor_error(g, w, precision)
            if err > tolerance:
                hi, hi_err = p, err
                hi_reason = why or f"error {err:.3g} of the scale (allowed {tolerance:g})"
                break
            lo = p
        log.info("checked %d tensors up to %s: first bad %s", len(picks), cands[picks[-1]].tensor,
                 cands[hi].tensor if hi is not None else "none")
        if hi is None and lo == len(cands) - 1:
            return None
    if hi is None:
        return None
    c = cands[hi]
    return Divergence(c.tensor, c.node, c.op_type, hi_err, hi_reason, builds)
