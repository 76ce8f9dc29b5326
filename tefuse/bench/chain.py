"""Benchmark one op chain: fused (one kernel) vs unfused (one kernel per op) vs the peer.

The peer is PyTorch on the same device (cuDNN convolution, eval-mode batch-norm), timed in
the same run with CUDA events; tefuse kernels are timed with TVM's time_evaluator. Results
are ratios, measured side by side.
"""
from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass
from typing import Optional

import numpy as np

from ..driver import build
from ..errors import TefuseError
from ..plan.spec import build_plan
from .timing import time_graph

log = logging.getLogger(__name__)

# image pre-processing steps (run-time rectangles, uint8 pixels): benched by bench/preprocess.py
IMAGE_OPS = ("crop_resize", "normalize", "color_convert")


@dataclass
class ChainResult:
    spec: str
    input: tuple
    dtype: str
    layout: str
    target: str
    fused_kernels: int
    unfused_kernels: int
    fused_ms: float
    unfused_ms: float
    peer_ms: Optional[float]
    max_rel_err: Optional[float]
    peer: str = ""

    @property
    def fused_vs_peer(self) -> Optional[float]:
        return self.fused_ms / self.peer_ms if self.peer_ms else None


def random_args(plan, rng) -> dict[str, np.ndarray]:
    vals = {}
    for n in plan.graph.inputs:
        a = rng.standard_normal(n.shape).astype(n.dtype)
        if n.name.endswith("_var"):
            a = np.abs(a) + 0.5
        if n.name.endswith("_weight"):
            a *= 0.1
        vals[n.name] = a
    return vals


def strict_fp32_peer(torch) -> None:
    """cuDNN autotuning on, TF32 off: the peer computes in float32 as tefuse's kernels do."""
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False


def _torch_chain(plan, vals, dtype=None):
    """The same chain in PyTorch (the peer), or None when torch or CUDA is absent.

    dtype=torch.float64 gives the reference the error is measured against.
    """
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    strict_fp32_peer(torch)
    dev = "cuda"
    t = {k: torch.from_numpy(v).to(dev, dtype) for k, v in vals.items()}
    nodes = [n for n in plan.graph.nodes if n.is_op]
    nhwc = plan.input.layout == "NHWC"

    def fn():
        x = t["x"].permute(0, 3, 1, 2) if nhwc else t["x"]
        for n in nodes:
            a = n.attrs
            ins = [i.name for i in n.inputs[1:]]
            if n.op == "conv2d":
                w = t[ins[0]].permute(3, 2, 0, 1) if nhwc else t[ins[0]]
                p = a["padding"]
                p = (p,) * 4 if isinstance(p, int) else tuple(p) if len(p) == 4 else (p[0], p[1]) * 2
                if p[0] == p[2] and p[1] == p[3]:
                    x = F.conv2d(x, w, None, a["strides"], (p[0], p[1]), a["dilation"], a["groups"])
                else:
                    x = F.conv2d(F.pad(x, (p[1], p[3], p[0], p[2])), w, None, a["strides"], 0,
                                 a["dilation"], a["groups"])
            elif n.op == "bias_add":
                x = x + t[ins[0]].view(1, -1, 1, 1)
            elif n.op == "batch_norm":
                g, b, m, v = (t[k] for k in ins)
                x = F.batch_norm(x, m, v, g, b, False, 0.0, a["epsilon"])
            elif n.op in ("add", "sub", "mul", "div"):
                o = t[ins[0]].permute(0, 3, 1, 2) if nhwc else t[ins[0]]
                x = getattr(torch, n.op)(x, o)
            elif n.op == "relu":
                x = F.relu(x)
            elif n.op in ("sigmoid", "tanh"):
                x = getattr(torch, n.op)(x)
            elif n.op in ("silu", "gelu", "hardswish", "relu6", "elu", "hardsigmoid"):
                x = getattr(F, n.op)(x)
            elif n.op == "leaky_relu":
                x = F.leaky_relu(x, a["alpha"])
            else:
                raise NotImplementedError(n.op)
        return x.permute(0, 2, 3, 1) if nhwc else x

    return fn


def bench_chain(spec: str, input_shape: tuple, *, dtype: str = "float32", layout: str = "NCHW",
                target: str = "cuda", db=None, seed: int = 0) -> ChainResult:
    plan = build_plan(spec, input_shape, dtype, layout)
    image_steps = sorted({n.op for n in plan.graph.nodes if n.is_op} & set(IMAGE_OPS))
    if image_steps:
        raise TefuseError(f"bench: the chain step(s) {', '.join(image_steps)} have no PyTorch peer here; "
                          f"python -m tefuse.bench.preprocess benches image pipelines")
    vals = random_args(plan, np.random.default_rng(seed))
    fused = build(plan.graph, target, db=db)
    unfused = build(plan.graph, target, db=db, fuse=False)
    t_fused = sum(fused.time_kernels(**vals)) * 1e3
    t_unfused = sum(unfused.time_kernels(**vals)) * 1e3
    out = fused.run(**vals)[0]
    peer_ms = err = None
    fn = _torch_chain(plan, vals) if fused.target.kind.name == "cuda" else None
    if fn is not None:
        import torch

        with torch.no_grad():
            ref = _torch_chain(plan, vals, torch.float64)().cpu().numpy()
        err = float(np.abs(out.astype(np.float64) - ref).max() / max(np.abs(ref).max(), 1e-12))
        peer_ms = time_graph(fn, repeat=50)
    return ChainResult(spec, tuple(input_shape), dtype, layout, fused.target.kind.name,
                       fused.num_kernels, unfused.num_kernels, t_fused, t_unfused, peer_ms, err,
                       "torch/cuDNN" if peer_ms else "")


def result_line(r: ChainResult) -> str:
    peer = f"peer {r.peer_ms:.4f} ms, tefuse/peer {r.fused_vs_peer:.2f}x" if r.peer_ms else "no peer"
    return (f"{r.spec} {r.input} {r.dtype} {r.layout}: fused {r.fused_kernels} kernel {r.fused_ms:.4f} ms | "
            f"unfused {r.unfused_kernels} kernels {r.unfused_ms:.4f} ms ({r.unfused_ms / r.fused_ms:.2f}x) | "
            f"{peer} | max rel err vs float64 {r.max_rel_err}")


def to_json(results: list[ChainResult]) -> str:
    return json.dumps([{**asdict(r), "fused_vs_peer": r.fused_vs_peer} for r in results], indent=1)
