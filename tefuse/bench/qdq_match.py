"""QDQ models against onnxruntime: how many output quantization steps a tefuse build of an
onnxruntime-quantized model lies from onnxruntime, beside how far onnxruntime's own two CPU paths
lie from each other on the same images.

    python -m tefuse.bench.qdq_match --models resnet18 resnet50 mobilenet_v2 --inputs 128 \\
        --target llvm --json benchmarks/qdq_match.json

Each torchvision model (seeded random weights, float32, exported at --batch) is quantized by
onnxruntime's `quantize_static` (QDQ format, per-channel int8 weights, int8 activations, MinMax
ranges over --calibration-batches batches of seeded normal images), built by tefuse for the
target, and run on --inputs seeded normal images (`accuracy.images`: not the calibration's). Two
references run the same model: onnxruntime with its graph optimizations off (the model's own float
ops between its QuantizeLinear / DequantizeLinear, ONNX's semantics; tests/graph/test_qdq.py
holds small nets to it within one step) and with its default optimizations (its integer QLinear
kernels, whose 16-bit pair sums saturate on x86 CPUs without VNNI: the row names the CPU). Each
pair of the three is compared in steps of the output's quantization (the scale of the
DequantizeLinear that produces the output): the worst step over the images, the mean of each
batch's worst, and the fraction of batches within one step.

Why the third pair: the ONNX semantics leave a float conv's summation order open, and a value
that lands on a rounding tie in an early layer quantizes one step apart on two correct paths; a
deep residual net carries that step on, and it grows through the layers. How far onnxruntime's
paths differ from each other is that floor for the model, and a tefuse build's distance from
either is read against it.
"""
from __future__ import annotations

import argparse
import json
import logging
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

log = logging.getLogger(__name__)

CALIBRATION_STREAM = 0xCA1  # keys the calibration images' generator apart from the compared ones
PAIRS = ("tefuse_vs_onnx", "tefuse_vs_ort_optimized", "ort_optimized_vs_onnx")


@dataclass
class StepStats:
    """One pair's distance in output quantization steps over the images."""

    worst: float
    mean_batch_worst: float
    within_one_step: float  # fraction of batches whose worst is at most one step


@dataclass
class MatchRow:
    model: str
    target: str
    inputs: int
    batch: int
    output_step: float
    pairs: dict
    top1_agreement: float  # tefuse against ONNX's semantics
    kernels: int
    build_s: float
    extra: dict = field(default_factory=dict)


def step_stats(worst_per_batch: Sequence[float]) -> StepStats:
    w = np.round(np.asarray(worst_per_batch, np.float64), 3)  # whole steps but for float rounding
    if not w.size:
        raise ValueError("no batches to compare")
    return StepStats(float(w.max()), float(w.mean()), float((w <= 1.0).mean()))


def output_step(model) -> float:
    """The scale of the DequantizeLinear whose output is the model's (first) output."""
    from onnx import numpy_helper

    out = model.graph.output[0].name
    producer = next((n for n in model.graph.node if out in n.output), None)
    if producer is None or producer.op_type != "DequantizeLinear":
        raise ValueError(f"output {out!r} is not a DequantizeLinear's ({producer.op_type if producer else 'none'}): "
                         "no output quantization step to count in")
    inits = {i.name: i for i in model.graph.initializer}
    scale = numpy_helper.to_array(inits[producer.input[1]])
    if scale.size != 1:
        raise ValueError(f"output {out!r} is dequantized per axis: no one step to count in")
    return float(scale.reshape(()))


def quantize(src: Path, dst: Path, batch: int, batches: int, seed: int = 0) -> Path:
    """onnxruntime's quantize_static of `src` (input `input`) into `dst`: QDQ, per-channel int8
    weights, int8 activations, MinMax over `batches` batches of seeded normal images."""
    from onnxruntime import quantization

    from .accuracy import IMAGE

    rng = np.random.default_rng([seed, CALIBRATION_STREAM])
    feeds = iter([{"input": rng.standard_normal((batch, *IMAGE)).astype(np.float32)} for _ in range(batches)])

    class Reader(quantization.CalibrationDataReader):
        def get_next(self):
            return next(feeds, None)

    quantization.quantize_static(str(src), str(dst), Reader(), quant_format=quantization.QuantFormat.QDQ,
                                 per_channel=True, activation_type=quantization.QuantType.QInt8,
                                 weight_type=quantization.QuantType.QInt8)
    return dst


def _session(model, optimized: bool):
    import onnxruntime as ort

    so = ort.SessionOptions()
    if not optimized:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def match_case(name: str, path: Path, target: str, inputs: int, batch: int, seed: int = 0,
               calibration: Optional[dict] = None) -> MatchRow:
    """A quantized ONNX model (`path`, input `input` of [batch, 3, 224, 224]) built by tefuse for
    `target`, against onnxruntime's two paths over `inputs` seeded images; `calibration` says how
    the model was quantized (kept in the row)."""
    import onnx

    from ..driver import build
    from ..frontend.onnx import import_onnx
    from .accuracy import images

    model = onnx.load(str(path))
    step = output_step(model)
    t0 = time.perf_counter()
    cg = build(import_onnx(model), target)
    build_s = time.perf_counter() - t0
    onnx_ref, ort_opt = _session(model, optimized=False), _session(model, optimized=True)
    worst = {p: [] for p in PAIRS}
    same = total = 0
    for x, n in images(inputs, batch, seed):
        t = np.asarray(cg.run(input=x)[0], np.float64)[:n]
        a = np.asarray(onnx_ref.run(None, {"input": x})[0], np.float64)[:n]
        b = np.asarray(ort_opt.run(None, {"input": x})[0], np.float64)[:n]
        for pair, (u, v) in zip(PAIRS, ((t, a), (t, b), (b, a))):
            worst[pair].append(float(np.abs(u - v).max()) / step)
        same += int((t.reshape(n, -1).argmax(-1) == a.reshape(n, -1).argmax(-1)).sum())
        total += n
    pairs = {p: asdict(step_stats(w)) for p, w in worst.items()}
    row = MatchRow(name, target, total, batch, step, pairs, same / total, cg.num_kernels, build_s,
                   {"seed": seed, "cpu": _cpu(), "quantized": calibration or {}})
    log.info("%s on %s: worst %g output steps from onnxruntime (optimizations off), %g from its optimized "
             "path, which lies %g from the first", name, target, pairs[PAIRS[0]]["worst"], pairs[PAIRS[1]]["worst"],
             pairs[PAIRS[2]]["worst"])
    return row


def _cpu() -> dict:
    """The CPU onnxruntime's optimized path ran on: its integer kernels depend on VNNI."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}
    model = next((ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("model name")), "")
    flags = next((ln.split(":", 1)[1].split() for ln in text.splitlines() if ln.startswith("flags")), [])
    return {"model": model, "vnni": any("vnni" in f for f in flags)}


def report(rows: Sequence[MatchRow], command: str) -> dict:
    return {"command": command, "rows": [asdict(r) for r in rows],
            "summary": {r.model: {p: r.pairs[p]["worst"] for p in PAIRS} for r in rows}}


def main(argv: Optional[Sequence[str]] = None) -> int:
    import shlex
    import sys

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", default=["resnet18", "resnet50", "mobilenet_v2"],
                   help="torchvision model names")
    p.add_argument("--inputs", type=int, default=128, help="images compared (default 128)")
    p.add_argument("--batch", type=int, default=8, help="images a run (default 8)")
    p.add_argument("--calibration-batches", type=int, default=4, help="quantize_static's batches (default 4)")
    p.add_argument("--target", "-t", default="llvm")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    if min(args.inputs, args.batch, args.calibration_batches) < 1:
        p.error("--inputs, --batch and --calibration-batches must be positive")

    from .models import export_torchvision

    command = "python -m tefuse.bench.qdq_match " + " ".join(map(shlex.quote, sys.argv[1:] if argv is None else argv))
    rows: list[MatchRow] = []
    with tempfile.TemporaryDirectory(prefix="tefuse-qdq-") as tmp:
        for name in args.models:
            src = export_torchvision(name, args.batch, Path(tmp) / f"{name}.onnx")
            path = quantize(src, Path(tmp) / f"{name}_qdq.onnx", args.batch, args.calibration_batches, args.seed)
            how = {"by": "onnxruntime.quantization.quantize_static", "format": "QDQ", "weights": "int8 per channel",
                   "activations": "int8", "calibrate_method": "MinMax",
                   "calibration_images": args.calibration_batches * args.batch}
            rows.append(match_case(name, path, args.target, args.inputs, args.batch, args.seed, how))
            r = rows[-1]
            print(f"{name}: output steps from onnxruntime, worst (mean of batch worsts): "
                  + "; ".join(f"{pair} {r.pairs[pair]['worst']:g} ({r.pairs[pair]['mean_batch_worst']:.2f})"
                              for pair in PAIRS) + f"; top-1 agreement {r.top1_agreement:.3f}", flush=True)
            if args.json:  # rewritten after every row: a cut-off run keeps what it measured
                Path(args.json).write_text(json.dumps(report(rows, command), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
