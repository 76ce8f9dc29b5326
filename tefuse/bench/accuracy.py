"""Quantized accuracy: how often a calibrated int8 / fp8 build picks float32's top-1 class.

    python -m tefuse.bench.accuracy --models resnet50 vit_b_16 --precision int8 fp8 --inputs 1000 \\
        --json benchmarks/accuracy_quant.json

Each torchvision model (seeded random weights, exported in float32) is calibrated as the models
bench calibrates it (entropy thresholds over seeded normal images, `precision.model_calibration`),
built for the target at each precision, and run on `--inputs` seeded normal images, `--batch` a
run. Its logits are compared with onnxruntime's float32 logits of the same images: the top-1
agreement (the quantized-inference criterion: at least 0.99, `precision.model_ok`) and the
relative error of each batch (max |difference| over max |float32|), mean and worst.

Agreement is bounded by how close the float32 logits lie: an image whose top two logits differ by
less than the build's error can change class whatever the arithmetic. So each row also gives the
count of images that changed class and the widest float32 margin (top-1 minus top-2 logit, over
the image's largest |logit|) among them, and the model's float32 margins at a few quantiles; `fp16`
builds the same model in half precision over the same images, the float arithmetic's own floor
for that criterion (random-weight ViT-B/16 puts 1% of its images within 0.0011 of a tie). The images
are drawn per batch from one seeded generator, so a run with the same seed, batch and count sees
the same images on any machine; on `llvm` the integer products are the GPU's, bit for bit.
"""
from __future__ import annotations

import argparse
import json
import logging
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np

log = logging.getLogger(__name__)

PRECISIONS = ("int8", "fp8")
FLOAT = ("fp16",)  # float builds of the same images: the floor the quantized rows are read against
MARGIN_QUANTILES = (0.01, 0.05, 0.5)
IMAGE = (3, 224, 224)
IMAGE_STREAM = 0xACC  # keys the images' generator apart from every plain seed


@dataclass
class AccuracyRow:
    model: str
    precision: str
    target: str
    inputs: int
    batch: int
    top1_agreement: float
    rel_err_mean: float
    rel_err_max: float
    ok: bool
    build_s: float
    run_s: float
    extra: dict = field(default_factory=dict)


def images(inputs: int, batch: int, seed: int = 0):
    """`inputs` seeded normal images in batches of `batch` (the last one short: padded to a full
    batch by repeating its first image, the padding's results dropped), with each batch's count.
    Drawn from a stream of their own: no seed gives the calibration's images (`default_rng(1)`)."""
    rng = np.random.default_rng([seed, IMAGE_STREAM])
    for start in range(0, inputs, batch):
        n = min(batch, inputs - start)
        x = rng.standard_normal((n, *IMAGE)).astype("float32")
        if n < batch:
            x = np.concatenate([x, np.repeat(x[:1], batch - n, axis=0)])
        yield x, n


@dataclass(frozen=True)
class Agreement:
    """A build's logits against the reference's over the images: `top1` the fraction with the
    same class; `rel_err_mean` / `rel_err_max` a batch's max |difference| over max |reference|;
    `margins` each image's reference margin (top-1 minus top-2 over its max |logit|);
    `flip_margins` the margins of the images that changed class."""

    top1: float
    rel_err_mean: float
    rel_err_max: float
    images: int
    margins: np.ndarray
    flip_margins: np.ndarray


def margins(logits: np.ndarray) -> np.ndarray:
    """Each row's top-1 minus top-2 logit over its largest |logit| (0 where all are 0)."""
    top2 = -np.sort(-logits, axis=-1)[:, :2]
    peak = np.abs(logits).max(-1)
    return np.where(peak > 0, (top2[:, 0] - top2[:, -1]) / np.where(peak > 0, peak, 1.0), 0.0)


def agreement(run: Callable[[np.ndarray], np.ndarray], reference: Callable[[np.ndarray], np.ndarray],
              batches) -> Agreement:
    """`run` against `reference` over `batches` of (images, count); both map a batch to its
    logits [batch, classes]."""
    same = total = 0
    errs, margin, flips = [], [], []
    for x, n in batches:
        got = np.asarray(run(x), np.float64).reshape(len(x), -1)[:n]
        want = np.asarray(reference(x), np.float64).reshape(len(x), -1)[:n]
        agree = got.argmax(-1) == want.argmax(-1)
        same += int(agree.sum())
        total += n
        errs.append(float(np.abs(got - want).max()) / max(float(np.abs(want).max()), 1e-12))
        m = margins(want)
        margin.append(m)
        flips.append(m[~agree])
    if not total:
        raise ValueError("no images to compare")
    return Agreement(same / total, float(np.mean(errs)), float(np.max(errs)), total, np.concatenate(margin),
                     np.concatenate(flips))


def accuracy_case(name: str, path: Path, calibration, precision: str, target: str, inputs: int, batch: int,
                  seed: int = 0) -> AccuracyRow:
    """One model at one precision: build from the float32 ONNX file `path` (input `input`,
    exported at `batch`) with `calibration` (a float precision takes none), then compare with
    onnxruntime over the images."""
    import onnx

    from ..driver import build
    from ..frontend.onnx import import_onnx
    from ..frontend.reference import onnxruntime_session
    from ..graph.calibration import products, projection_shortcuts
    from .precision import model_ok

    t0 = time.perf_counter()
    quantized = precision in PRECISIONS
    graph = import_onnx(onnx.load(str(path)))
    cg = build(graph, target, precision=precision, calibration=calibration if quantized else None)
    build_s = time.perf_counter() - t0
    session = onnxruntime_session(str(path))
    t0 = time.perf_counter()
    a = agreement(lambda x: cg.run(input=x)[0], lambda x: session.run(None, {"input": x})[0],
                  images(inputs, batch, seed))
    run_s = time.perf_counter() - t0
    extra = {"kernels": cg.num_kernels, "seed": seed,
             "reference_margin_quantiles": {str(q): float(np.quantile(a.margins, q)) for q in MARGIN_QUANTILES},
             "changed_class": int(len(a.flip_margins)),
             "changed_class_margin_max": float(a.flip_margins.max(initial=0.0))}
    if quantized:
        scaled = {k for k in calibration.thresholds if calibration.scale(k) is not None}
        extra.update(calibrator=calibration.method,
                     quantized_products=sum(p.name in scaled for p in products(graph)),
                     quantized_shortcuts=sum(a in scaled for a in projection_shortcuts(graph)))
    row = AccuracyRow(name, precision, target, a.images, batch, a.top1, a.rel_err_mean, a.rel_err_max,
                      model_ok(precision, a.rel_err_mean, a.top1), build_s, run_s, extra)
    log.info("%s %s on %s: top-1 agreement %.4f over %d images, relative error mean %.3g worst %.3g; the "
             "images that changed class lay within %.3g of a tie", name, precision, target, a.top1, a.images,
             a.rel_err_mean, a.rel_err_max, extra["changed_class_margin_max"])
    return row


def report(rows: Sequence[AccuracyRow], command: str) -> dict:
    return {"command": command, "rows": [asdict(r) for r in rows],
            "summary": {f"{r.model}/{r.precision}": {"top1_agreement": r.top1_agreement, "ok": r.ok}
                        for r in rows}}


def main(argv: Optional[Sequence[str]] = None) -> int:
    import shlex
    import sys

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", default=["resnet50", "vit_b_16"], help="torchvision model names")
    p.add_argument("--precision", nargs="+", default=list(PRECISIONS), choices=PRECISIONS + FLOAT,
                   help="quantized builds, and fp16 for the float floor of the same images")
    p.add_argument("--inputs", type=int, default=1000, help="images compared (default 1000)")
    p.add_argument("--batch", type=int, default=50, help="images a run (default 50)")
    p.add_argument("--target", "-t", default="cuda")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    if args.inputs < 1 or args.batch < 1:
        p.error("--inputs and --batch must be positive")

    from .models import export_torchvision
    from .precision import model_calibration

    command = "python -m tefuse.bench.accuracy " + " ".join(map(shlex.quote, sys.argv[1:] if argv is None else argv))
    rows: list[AccuracyRow] = []
    with tempfile.TemporaryDirectory(prefix="tefuse-accuracy-") as tmp:
        workdir = Path(tmp)
        for name in args.models:
            path = export_torchvision(name, args.batch, workdir / f"{name}_b{args.batch}.onnx")
            calibration = model_calibration(name, workdir) if set(args.precision) & set(PRECISIONS) else None
            for precision in args.precision:
                rows.append(accuracy_case(name, path, calibration, precision, args.target, args.inputs,
                                          args.batch, args.seed))
                r = rows[-1]
                print(f"{name} {precision}: top-1 agreement {r.top1_agreement:.4f} over {r.inputs} images "
                      f"({'ok' if r.ok else 'not ok'}); {r.extra['changed_class']} changed class, all within "
                      f"{r.extra['changed_class_margin_max']:.3g} of a tie", flush=True)
                if args.json:  # rewritten after every row: a cut-off run keeps what it measured
                    Path(args.json).write_text(json.dumps(report(rows, command), indent=1))
    return 0 if all(r.ok for r in rows if r.precision in PRECISIONS) else 1  # fp16's rows are the floor


if __name__ == "__main__":
    raise SystemExit(main())
