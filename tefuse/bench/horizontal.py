"""Horizontal fusion bench, on a CUDA GPU: fewer launches for the same work.

- adam: Adam over ResNet-50's parameter tensors (torchvision's shapes: 161 tensors, 25.6M
  float32 values) with `MultiTensorAdam` (tefuse/optim.py), horizontal fusion on and off, against
  `torch.optim.Adam(fused=True)`, after checking one step of each against numpy; and the share of
  the device's copy bandwidth reached on the bytes a step must move (p, g, m, v read; p, m, v
  written: 28 bytes a value).
- googlenet: torchvision's GoogLeNet, fp16, batch 1 (its parallel branches and small kernels),
  built with horizontal fusion on and off: launches and latency of each, in turns.

Each pair is timed as CUDA graphs in turns (preprocess.timed_in_turns), in one process.

    python -m tefuse.bench.horizontal --json benchmarks/horizontal.json
"""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import numpy as np

from .runs import write_json_whole

log = logging.getLogger(__name__)

BETAS, EPS, LR = (0.9, 0.999), 1e-8, 1e-3
BYTES_PER_VALUE = 7 * 4  # p, g, m, v read; p, m, v written


def resnet50_shapes() -> list[tuple[int, ...]]:
    from torchvision.models import resnet50

    return [tuple(p.shape) for p in resnet50().parameters()]


def bench_adam(torch) -> dict:
    from ..optim import MultiTensorAdam
    from .preprocess import copy_bandwidth, timed_in_turns

    shapes = resnet50_shapes()
    rng = np.random.default_rng(0)
    host = [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(3)]
    host.append([rng.uniform(0.01, 1, s).astype(np.float32) for s in shapes])

    def device():
        return [[torch.from_numpy(a.copy()).cuda() for a in group] for group in host]

    p0, g0, m0, v0 = host
    m1 = [BETAS[0] * m + (1 - BETAS[0]) * g for m, g in zip(m0, g0)]
    v1 = [BETAS[1] * v + (1 - BETAS[1]) * g * g for v, g in zip(v0, g0)]
    p1 = [p - LR * m / (np.sqrt(v) + EPS) for p, m, v in zip(p0, m1, v1)]
    steps, launches, errors = {}, {}, {}
    for horizontal in (True, False):
        opt = MultiTensorAdam(shapes, "cuda", lr=LR, betas=BETAS, eps=EPS, horizontal=horizontal)
        p, g, m, v = device()
        opt.step(p, g, m, v, stream=torch.cuda.current_stream())
        torch.cuda.synchronize()
        errors[horizontal] = max(float(np.abs(a.cpu().numpy() - b).max()) for a, b in zip(p, p1))
        key = "tefuse_horizontal" if horizontal else "tefuse_apart"
        steps[key] = (lambda o=opt, t=(p, g, m, v): o.step(*t, stream=torch.cuda.current_stream()))
        launches[key] = opt.launches
    tp, tg, tm, tv = device()
    params = [torch.nn.Parameter(t) for t in tp]
    for prm, grad in zip(params, tg):
        prm.grad = grad
    adam = torch.optim.Adam(params, lr=LR, betas=BETAS, eps=EPS, fused=True)
    steps["torch_fused"] = adam.step
    ms, how = timed_in_turns(torch, steps)
    values = sum(int(np.prod(s)) for s in shapes)
    bandwidth = copy_bandwidth(torch)
    return {"tensors": len(shapes), "values": values, "launches": launches,
            "max_error_vs_numpy": {str(k): v for k, v in errors.items()}, "ms": ms, "timed_as": how,
            "bandwidth_share": {k: values * BYTES_PER_VALUE / (t * 1e-3) / bandwidth for k, t in ms.items()},
            "copy_bandwidth_gbs": bandwidth / 1e9}


def bench_googlenet(torch, workdir: Path) -> dict:
    import onnx

    from ..driver import build
    from ..frontend.onnx import import_onnx
    from ..frontend.reference import onnxruntime_outputs
    from ..options import BuildOptions
    from . import zoo, zoo_builders
    from .preprocess import timed_in_turns

    entry = zoo.entry("googlenet")
    cfg = entry.config(False)
    feeds = zoo.random_inputs(cfg, batch=1)
    path = zoo_builders.export_onnx(zoo.build_module(entry, False), feeds, cfg.outputs, workdir / "googlenet_b1.onnx")
    model = onnx.load(str(path))
    want = onnxruntime_outputs(model, feeds)[0]
    device_feeds = {k: torch.from_numpy(v).cuda() for k, v in feeds.items()}
    runs, launches, errors = {}, {}, {}
    for horizontal in (True, False):
        cg = build(import_onnx(model), "cuda", precision="fp16", options=BuildOptions(horizontal=horizontal))
        out = torch.empty(want.shape, dtype=torch.float32, device="cuda")
        key = "horizontal" if horizontal else "apart"
        runs[key] = (lambda c=cg, o=out: c.run(device_feeds, out=[o], stream=torch.cuda.current_stream()))
        runs[key]()
        torch.cuda.synchronize()
        errors[key] = float(np.abs(out.cpu().numpy() - want.reshape(out.shape)).max() / np.abs(want).max())
        launches[key] = cg.num_kernels
    ms, how = timed_in_turns(torch, runs)
    return {"launches": launches, "rel_error_vs_onnxruntime": errors, "ms": ms, "timed_as": how,
            "ratio": ms["horizontal"] / ms["apart"]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", nargs="+", default=["adam", "googlenet"], choices=["adam", "googlenet"])
    p.add_argument("--workdir", default="/tmp/tefuse-horizontal")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("horizontal bench: needs a CUDA GPU (torch.cuda.is_available() is False)")
    Path(args.workdir).mkdir(parents=True, exist_ok=True)
    results = {}
    if "adam" in args.cases:
        results["adam"] = bench_adam(torch)
        log.info("adam: %s", results["adam"]["ms"])
    if "googlenet" in args.cases:
        results["googlenet"] = bench_googlenet(torch, Path(args.workdir))
        log.info("googlenet: %s", results["googlenet"]["ms"])
    if args.json:
        write_json_whole(args.json, {"command": " ".join(["python -m tefuse.bench.horizontal", *(argv or sys.argv[1:])]),
                                     "device": torch.cuda.get_device_name(), **results})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
