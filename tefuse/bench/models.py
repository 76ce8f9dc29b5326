"""Benchmark whole networks: torchvision models exported to ONNX, built by tefuse, checked
against onnxruntime, timed beside PyTorch on the same GPU.

Run on the GPU machine (torch and torchvision there; random weights, no download):

    python -m tefuse.bench.models resnet50 mobilenet_v2 --batch 1 --json out.json

The peer is PyTorch eager in float32 with cuDNN autotuning on and TF32 off (tefuse's
kernels are strict float32); onnxruntime (CPU) is only the numerical reference.
"""
from __future__ import annotations

import argparse
import json
import logging
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from .chain import strict_fp32_peer
from .timing import kernel_profile, time_wall

log = logging.getLogger(__name__)


@dataclass
class ModelResult:
    model: str
    batch: int
    target: str
    onnx_nodes: int
    kernels: int
    build_s: float
    build_jobs: int  # kernels compiled at once
    max_abs_err: float
    max_err_over_scale: float  # max |tefuse - ort| / max |ort|
    ok: bool
    tefuse_ms: float  # one whole-graph run, inputs and outputs on the device
    tefuse_kernel_ms: float  # sum of the kernels' own device times
    peer_ms: Optional[float]  # PyTorch eager on the same device
    peer_graph_ms: Optional[float] = None  # PyTorch replayed as a CUDA graph: its kernels' time
    peer: str = ""
    slowest: list = field(default_factory=list)  # [(kernel, template, ms, config source)], the 10 slowest

    @property
    def tefuse_vs_peer(self) -> Optional[float]:
        return self.tefuse_ms / self.peer_ms if self.peer_ms else None


def torch_model(name: str):
    """torchvision's `name` with seeded random weights and batch-norm statistics.

    Fresh BN layers are identities (mean 0, var 1, gamma 1, beta 0) and MobileNet's
    default init gives logits near 1e-9; random statistics make the check meaningful. ViT's
    classifier head starts at zero (every logit 0, any error hidden): all-zero weight tensors
    get small random values.
    """
    import torch
    import torchvision

    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None).eval()
    with torch.no_grad():
        randomize_batch_norm(model)
        for p in model.parameters():
            if p.dim() > 1 and not p.any():
                p.normal_(0, 0.02)
    return model


def randomize_batch_norm(model) -> None:
    """Random statistics, scale and shift (from torch's global generator) for every batch norm
    of `model`: any module with running_mean and running_var, torchvision's FrozenBatchNorm2d
    (buffers only) included."""
    import torch

    with torch.no_grad():
        for m in model.modules():
            if isinstance(getattr(m, "running_mean", None), torch.Tensor) and \
                    isinstance(getattr(m, "running_var", None), torch.Tensor):
                m.running_mean.normal_(0, 0.1)
                m.running_var.uniform_(0.5, 1.5)
                if m.weight is not None:
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.normal_(0, 0.1)


def export_torchvision(name: str, batch: int, path: Path) -> Path:
    """Export torchvision's `name` (random weights) to ONNX at opset 17."""
    import torch

    model = torch_model(name)
    x = torch.randn(batch, 3, 224, 224)
    kw = dict(input_names=["input"], output_names=["logits"], opset_version=17)
    try:
        torch.onnx.export(model, (x,), str(path), dynamo=False, **kw)
    except TypeError:  # a torch without the dynamo switch
        torch.onnx.export(model, (x,), str(path), **kw)
    return path


def _peer_ms(name: str, x: np.ndarray) -> tuple[Optional[float], Optional[float]]:
    """PyTorch's time for the model: eager, and replayed as a CUDA graph (no launch gaps)."""
    try:
        import torch
    except ImportError:
        return None, None
    if not torch.cuda.is_available():
        return None, None
    strict_fp32_peer(torch)
    model = torch_model(name).cuda()
    xt = torch.from_numpy(x).cuda()
    with torch.no_grad():
        eager = time_wall(lambda: model(xt), torch.cuda.synchronize)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            model(xt)
        graph = time_wall(g.replay, torch.cuda.synchronize)
    return eager, graph


def bench_model(name: str, batch: int = 1, target: str = "cuda", workdir: Path = Path("."),
                db="default", jobs: Optional[int] = None) -> ModelResult:
    import onnx
    import tvm

    from ..driver import build, default_jobs
    from ..frontend.reference import onnxruntime_outputs
    from ..frontend.onnx import import_onnx

    path = export_torchvision(name, batch, workdir / f"{name}_b{batch}.onnx")
    model = onnx.load(str(path))
    t0 = time.perf_counter()
    jobs = jobs or default_jobs()
    cg = build(import_onnx(model), target, db=db, jobs=jobs)
    build_s = time.perf_counter() - t0
    log.info("%s: %d kernels for %d ONNX nodes, built in %.1fs (%d jobs)", name, cg.num_kernels,
             len(model.graph.node), build_s, jobs)
    x = np.random.default_rng(0).standard_normal((batch, 3, 224, 224)).astype("float32")
    got = cg.run(input=x)[0]
    want = onnxruntime_outputs(str(path), {"input": x})[0].reshape(got.shape)
    err = float(np.abs(got.astype(np.float64) - want).max())
    scale = float(np.abs(want).max())
    if scale == 0:
        log.warning("%s: the reference output is all zeros, so the check proves nothing", name)
    dev = cg.device
    xd = tvm.runtime.tensor(x, dev)
    t_run = time_wall(lambda: cg.run(input=xd, as_numpy=False), dev.sync)
    per_kernel = cg.time_kernels(input=xd, number=5, repeat=3, min_repeat_ms=0)
    t_kern = 1e3 * sum(per_kernel)
    slowest = kernel_profile(cg.kernels, per_kernel)[:10]
    peer, peer_graph = _peer_ms(name, x) if cg.target.kind.name == "cuda" else (None, None)
    return ModelResult(name, batch, cg.target.kind.name, len(model.graph.node), cg.num_kernels, build_s,
                       jobs, err, err / max(scale, 1e-12), 0 < scale and err <= 1e-3 * scale, t_run, t_kern,
                       peer, peer_graph, "torch (cuDNN, fp32, no TF32)" if peer else "", slowest)


def result_line(r: ModelResult) -> str:
    peer = (f"torch eager {r.peer_ms:.3f} ms, tefuse/torch {r.tefuse_vs_peer:.2f}x; torch CUDA graph "
            f"{r.peer_graph_ms:.3f} ms, tefuse kernels/torch graph {r.tefuse_kernel_ms / r.peer_graph_ms:.2f}x"
            if r.peer_ms else "no peer")
    return (f"{r.model} b{r.batch} {r.target}: {r.kernels} kernels / {r.onnx_nodes} ONNX nodes, "
            f"build {r.build_s:.1f}s ({r.build_jobs} jobs) | vs onnxruntime max err {r.max_abs_err:.3g} "
            f"({r.max_err_over_scale:.2g} of scale) {'OK' if r.ok else 'MISMATCH'} | "
            f"tefuse {r.tefuse_ms:.3f} ms (kernels {r.tefuse_kernel_ms:.3f}) | {peer}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("models", nargs="+", help="torchvision model names (resnet50, mobilenet_v2, ...)")
    p.add_argument("--batch", type=int, nargs="+", default=[1])
    p.add_argument("--target", default="cuda")
    p.add_argument("--workdir", default=".")
    p.add_argument("--json", default=None)
    p.add_argument("--no-db", action="store_true", help="ignore tuning logs (fallback configs)")
    p.add_argument("-j", "--jobs", type=int, default=None, help="kernels compiled at once (default: CPU count)")
    p.add_argument("--profile", action="store_true", help="print the 10 slowest kernels of each model")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    results = []
    for name in args.models:
        for b in args.batch:
            r = bench_model(name, b, args.target, Path(args.workdir), db=None if args.no_db else "default",
                            jobs=args.jobs)
            print(result_line(r), flush=True)
            if args.profile:
                for name_, template, ms, source in r.slowest:
                    print(f"  {ms:8.4f} ms  {template:28s} {source:9s} {name_}")
            results.append(r)
    if args.json:
        Path(args.json).write_text(json.dumps([{**asdict(r), "tefuse_vs_peer": r.tefuse_vs_peer}
                                               for r in results], indent=1))
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
