"""Calibrating a float model for int8 or fp8 (`build(..., precision="int8", calibration=...)`).

`calibrate` runs the float model on sample inputs (built for llvm, with the data input of every
quantizable conv2d / dense / matmul as an extra output) and picks each one's threshold as
TensorRT's calibrators do: `max` (the largest |value| seen), `percentile` (of |value|, 99.99 by
default) or `entropy` (the threshold whose 128-level quantized histogram loses the least
information, KL divergence). Percentile and entropy use onnxruntime's histogram collector
(`onnxruntime.quantization.calibrate.HistogramCollector`), the one its quantize_static uses.

`layer_errors` measures what each quantized product loses on the samples: its output with that
product alone in int8 against the float model's, as a relative error, worst first: the report
from which products are pinned to stay float (`Calibration.pin`, `pin_worst`).
"""
from __future__ import annotations

import contextlib
import io
import logging
import time
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np

from .driver import VERBOSE, build
from .errors import GraphError
from .graph.calibration import METHODS, Calibration, insert_qdq, products, projection_shortcuts
from .graph.ir import CONST, INPUT, Graph

log = logging.getLogger(__name__)

Sample = Mapping[str, np.ndarray]


@dataclass(frozen=True)
class LayerError:
    """What quantizing one product alone costs on the samples: max |int8 - float| of its output
    over max |float| (`relative`)."""

    product: str
    relative: float


def _probe(graph: Graph, nodes: Sequence) -> Graph:
    """The graph computing `nodes` (none of them graph inputs) as its outputs."""
    return Graph(list(graph.inputs), list(nodes))


def _samples(samples: Iterable[Sample]) -> list[Sample]:
    out = list(samples)
    if not out:
        raise GraphError("calibration needs at least one sample input")
    return out


def _collect(graph: Graph, samples: list[Sample]) -> dict[str, list[np.ndarray]]:
    """product name -> its data input's values on each sample (residual add name -> its
    projection shortcut's)."""
    prods = products(graph)
    if not prods:
        raise GraphError("calibration: the graph has no float conv2d / dense / matmul with a constant weight")
    data = {p.name: p.inputs[0] for p in prods if p.inputs[0].op != CONST}  # a constant's product stays float
    # a residual add's projection shortcut: its threshold under the add's name (graph/calibration.py)
    data.update({add: graph.node(add).inputs[k] for add, k in projection_shortcuts(graph).items()})
    if not data:
        raise GraphError("calibration: no conv2d / dense / matmul of the graph reads a computed value or an input")
    inner = list({id(n): n for n in data.values() if n.op != INPUT}.values())
    cg = build(_probe(graph, inner), "llvm") if inner else None
    values: dict[str, list[np.ndarray]] = {name: [] for name in data}
    for k, feeds in enumerate(samples):
        t0 = time.perf_counter()
        outs = dict(zip((n.name for n in inner), cg.run(dict(feeds)))) if cg else {}
        log.log(VERBOSE, "calibration: sample %d/%d run in %.1fs", k + 1, len(samples), time.perf_counter() - t0)
        for name, node in data.items():
            if node.op == INPUT:
                if node.name not in feeds:
                    raise GraphError(f"calibration sample {k}: no value for input {node.name!r}")
                outs[node.name] = np.asarray(feeds[node.name])
            values[name].append(np.asarray(outs[node.name], np.float32))
    return values


def _histogram_thresholds(values: dict[str, list[np.ndarray]], method: str, percentile: float) -> dict[str, float]:
    from onnxruntime.quantization.calibrate import HistogramCollector

    collector = HistogramCollector(method=method, symmetric=True, num_bins=2048, num_quantized_bins=128,
                                   percentile=percentile, scenario="same")
    with contextlib.redirect_stdout(io.StringIO()):  # it reports its progress with print
        collector.collect({k: [np.ascontiguousarray(v).ravel() for v in vs] for k, vs in values.items()})
        found = collector.compute_collection_result()
    return {k: float(max(abs(float(found[k][0])), abs(float(found[k][1])))) for k in values}


def calibrate(graph: Graph, samples: Iterable[Sample], method: str = "max", percentile: float = 99.99,
              pin: Iterable[str] = ()) -> Calibration:
    """The thresholds of `graph`'s quantizable products' data inputs over `samples` (each a
    {input name: array} feed), by `method` (max, percentile, entropy); `pin` names products that
    stay float."""
    if method not in METHODS:
        raise GraphError(f"calibration method {method!r}: use one of {', '.join(METHODS)}")
    samples = _samples(samples)
    values = _collect(graph, samples)
    if method == "max":
        thresholds = {k: float(max(np.abs(v).max(initial=0.0) for v in vs)) for k, vs in values.items()}
    else:
        thresholds = _histogram_thresholds(values, method, percentile)
    log.info("calibration (%s): %d thresholds over %d samples", method, len(thresholds), len(samples))
    return Calibration(method, thresholds, frozenset(pin))


def layer_errors(graph: Graph, calibration: Calibration, samples: Iterable[Sample],
                 precision: str = "int8") -> list[LayerError]:
    """Each calibrated product's output error with it alone quantized (to `precision`'s format:
    int8 or fp8), on llvm, worst first."""
    samples = _samples(samples)
    prods = [p for p in products(graph) if calibration.scale(p.name) is not None]
    if not prods:
        return []
    probe = _probe(graph, prods)
    ref = [build(probe, "llvm").run(dict(s)) for s in samples]
    out = []
    for k, p in enumerate(prods):
        alone = Calibration(calibration.method, {p.name: calibration.thresholds[p.name]})
        # in float32 but for this product's quantized operands: the error is the quantization's alone
        got = build(insert_qdq(Graph(list(graph.inputs), [p]), alone, precision), "llvm")
        err = scale = 0.0
        for s, r in zip(samples, ref):
            y = got.run(dict(s))[0].astype(np.float64)
            err = max(err, float(np.abs(y - r[k]).max()))
            scale = max(scale, float(np.abs(r[k]).max()))
        out.append(LayerError(p.name, err / scale if scale else err))
    return sorted(out, key=lambda e: -e.relative)


def pin_worst(calibration: Calibration, errors: Sequence[LayerError], limit: float) -> Calibration:
    """The calibration with every product whose relative error exceeds `limit` pinned to float."""
    worse = [e.product for e in errors if e.relative > limit]
    if worse:
        log.info("calibration: %d product(s) above %.3g relative error stay float: %s", len(worse), limit,
                 ", ".join(worse[:8]) + (" ..." if len(worse) > 8 else ""))
    return calibration.pin(worse)
