"""Horizontal fusion bench, on a CUDA GPU: fewer launches for the same work.

- adam: one Adam step over ResNet-50's parameter tensors (torchvision's shapes: 161 tensors,
  25.6M float32 values) with `MultiTensorAdam` (tefuse/optim.py; horizontal fusion on: one
  launch, off: a launch a tensor) against `torch.optim.Adam(fused=True, capturable=True)`, after
  checking the first step of each against numpy; and the share of the device's copy bandwidth
  (torch's device-to-device copy, measured here) that each reaches on the bytes a step must move
  (p, g, m, v read; p, m, v written: 28 bytes a value).
- googlenet: torchvision's GoogLeNet, fp16, batch 1 (its parallel Inception branches and small
  kernels), exported as the model zoo exports it (bench/zoo.py), built with horizontal fusion on
  and off: launches, error against onnxruntime and latency of each.

Each set is timed as CUDA graphs in turns (preprocess.timed_in_turns), in one process.

    python -m tefuse.bench.horizontal --json benchmarks/horizontal.json
"""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from .runs import write_json_whole

log = logging.getLogger(__name__)

BETAS, EPS, LR = (0.9, 0.999), 1e-8, 1e-3
BYTES_PER_VALUE = 7 * 4  # p, g, m, v read; p, m, v written
# a first step from zero moments moves every value by about lr: an error past this share of lr
# is a wrong update, not float32 rounding of the parameter
ADAM_TOLERANCE = 1e-2


def resnet50_shapes() -> list[tuple[int, ...]]:
    from torchvision.models import resnet50

    return [tuple(p.shape) for p in resnet50().parameters()]


def numpy_first_step(p: np.ndarray, g: np.ndarray) -> np.ndarray:
    """torch.optim.Adam's first step from zero moments, in float64."""
    b1, b2 = BETAS
    p, g = p.astype(np.float64), g.astype(np.float64)
    m_hat, v_hat = (1 - b1) * g / (1 - b1), (1 - b2) * g * g / (1 - b2)
    return p - LR * m_hat / (np.sqrt(v_hat) + EPS)


def update_error(got: Sequence, want: Sequence[np.ndarray]) -> float:
    """The worst error of the step's update over all tensors, as a share of lr."""
    return max(float(np.abs(g.cpu().numpy().astype(np.float64) - w).max()) for g, w in zip(got, want)) / LR


def bench_adam(torch) -> dict:
    from ..optim import MultiTensorAdam, bias_corrected
    from .preprocess import copy_bandwidth, timed_in_turns

    shapes = resnet50_shapes()
    rng = np.random.default_rng(0)
    p0 = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    g0 = [(rng.standard_normal(s) * 1e-2).astype(np.float32) for s in shapes]
    want = [numpy_first_step(p, g) for p, g in zip(p0, g0)]
    # the stream is looked up at each call: a CUDA graph captures on a stream of its own
    stream = torch.cuda.current_stream

    def on_device(arrays):
        return [torch.from_numpy(a.copy()).cuda() for a in arrays]

    steps, launches, errors = {}, {}, {}
    lr_1, eps_1 = (torch.tensor(x, dtype=torch.float32, device="cuda") for x in bias_corrected(LR, BETAS, EPS, 1))
    for horizontal in (True, False):
        key = "tefuse_horizontal" if horizontal else "tefuse_apart"
        opt = MultiTensorAdam(shapes, "cuda", lr=LR, betas=BETAS, eps=EPS, horizontal=horizontal)
        p, g = on_device(p0), on_device(g0)
        m, v = [torch.zeros_like(t) for t in p], [torch.zeros_like(t) for t in p]
        opt.step(p, g, m, v, stream=stream())
        torch.cuda.synchronize()
        errors[key] = update_error(p, want)
        launches[key] = opt.launches
        # the first step's lr and eps held on the device: the launch alone, capturable
        steps[key] = (lambda o=opt, t=(p, g, m, v): o.update(*t, lr_1, eps_1, stream=stream()))
    params = [torch.nn.Parameter(t) for t in on_device(p0)]
    for prm, grad in zip(params, on_device(g0)):
        prm.grad = grad
    adam = torch.optim.Adam(params, lr=LR, betas=BETAS, eps=EPS, fused=True, capturable=True)
    adam.step()
    torch.cuda.synchronize()
    errors["torch_fused"] = update_error([prm.detach() for prm in params], want)
    launches["torch_fused"] = None  # torch chunks the tensors into launches of its own
    steps["torch_fused"] = adam.step
    wrong = {k: e for k, e in errors.items() if not e <= ADAM_TOLERANCE}
    for k in wrong:
        log.error("adam: %s's step is off numpy's by %.3g of lr: not timed", k, wrong[k])
        steps.pop(k)
    ms, how = timed_in_turns(torch, steps)
    values = sum(int(np.prod(s)) for s in shapes)
    bandwidth = copy_bandwidth(torch)
    return {"tensors": len(shapes), "values": values, "launches": launches,
            "max_update_error_over_lr": errors, "tolerance_over_lr": ADAM_TOLERANCE, "ms": ms, "timed_as": how,
            "bandwidth_share": {k: values * BYTES_PER_VALUE / (t * 1e-3) / bandwidth for k, t in ms.items()},
            "copy_bandwidth_gbs": bandwidth / 1e9,
            "ratio_to_torch": {k: t / ms["torch_fused"] for k, t in ms.items()} if "torch_fused" in ms else None}


def bench_googlenet(torch, cache_dir: Optional[Path]) -> dict:
    import onnx

    from ..driver import build
    from ..frontend.onnx import import_onnx
    from ..frontend.reference import onnxruntime_outputs
    from ..options import BuildOptions
    from . import zoo
    from .preprocess import timed_in_turns

    entry = zoo.entry("googlenet")
    feeds = zoo.random_inputs(entry.config(False), batch=1)
    model = onnx.load(str(zoo.export(entry, False, cache_dir)))
    want = onnxruntime_outputs(model, feeds)
    device_feeds = {k: torch.from_numpy(v).cuda() for k, v in feeds.items()}
    stream = torch.cuda.current_stream  # looked up at each call, as in bench_adam
    runs, launches, merged, errors = {}, {}, {}, {}
    for horizontal in (True, False):
        key = "horizontal" if horizontal else "apart"
        cg = build(import_onnx(model), "cuda", precision="fp16", options=BuildOptions(horizontal=horizontal))
        outs = [torch.empty(w.shape, dtype=torch.float32, device="cuda") for w in want]
        runs[key] = (lambda c=cg, o=outs: c.run(device_feeds, out=o, stream=stream()))
        runs[key]()
        torch.cuda.synchronize()
        errors[key], _, _ = zoo.compare([o.cpu().numpy() for o in outs], want, "fp16", None)
        launches[key] = cg.num_kernels
        merged[key] = [k.group.name for k in cg.kernels if k.workload.startswith("horizontal(")]
    wrong = {k: e for k, e in errors.items() if not e <= zoo.TOLERANCE["fp16"]}
    for k in wrong:
        log.error("googlenet: %s is off onnxruntime by %.3g of the output scale: not timed", k, wrong[k])
        runs.pop(k)
    ms, how = timed_in_turns(torch, runs)
    return {"launches": launches, "merged_launches": merged, "error_vs_onnxruntime": errors,
            "tolerance": zoo.TOLERANCE["fp16"], "ms": ms, "timed_as": how,
            "ratio": ms["horizontal"] / ms["apart"] if len(ms) == 2 else None}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", nargs="+", default=["adam", "googlenet"], choices=["adam", "googlenet"])
    p.add_argument("--cache-dir", default=None, help="where the zoo's ONNX exports are kept (default: the zoo's)")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("horizontal bench: needs a CUDA GPU (torch.cuda.is_available() is False)")
    results = {}
    if "adam" in args.cases:
        results["adam"] = bench_adam(torch)
        log.info("adam: launches %s, ms %s", results["adam"]["launches"], results["adam"]["ms"])
    if "googlenet" in args.cases:
        results["googlenet"] = bench_googlenet(torch, Path(args.cache_dir) if args.cache_dir else None)
        log.info("googlenet: launches %s, ms %s", results["googlenet"]["launches"], results["googlenet"]["ms"])
    if args.json:
        argv = sys.argv[1:] if argv is None else list(argv)
        write_json_whole(args.json, {"command": " ".join(["python -m tefuse.bench.horizontal", *argv]),
                                     "device": torch.cuda.get_device_name(), **results})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
