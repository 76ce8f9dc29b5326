"""Optimizer steps over many parameter tensors of different shapes in one launch (PyTorch's
multi-tensor `foreach` / fused Adam).

`adam_graph` is one graph holding an Adam update (p, g, m, v -> p', m', v', one multi-output
elementwise kernel each, see fusion) per parameter tensor, the update rule of the one-kernel Adam
group. `MultiTensorAdam` builds it once with horizontal fusion over kernels of any size
(codegen/horizontal.py: each tensor's kernel a range of thread blocks of one launch, as many
launches as the device's kernel-parameter space needs: one for ResNet-50's 161 tensors on sm_70
and later) and steps the tensors in place: each output is written over its input, which an
elementwise kernel may do (every element is read before it is written, by the same thread).

The step's learning rate and epsilon are inputs of the graph (scalars), so torch.optim.Adam's
bias correction, which changes them every step, needs no rebuild (`bias_corrected`).
"""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import numpy as np

from .driver import build
from .errors import GraphError
from .graph.ir import Graph, GraphBuilder
from .options import BuildOptions

Shape = Sequence[int]
HYPER = ("lr", "eps")  # the graph's scalar inputs, before the tensors'


def adam_graph(shapes: Sequence[Shape], betas: tuple[float, float] = (0.9, 0.999), dtype: str = "float32") -> Graph:
    """Inputs lr and eps (scalars), then p{k}, g{k}, m{k}, v{k} per tensor k; outputs p{k}_new,
    m{k}_new, v{k}_new in that order, tensor after tensor:
    m' = b1 m + (1 - b1) g, v' = b2 v + (1 - b2) g^2, p' = p - lr m' / (sqrt(v') + eps)."""
    if not shapes:
        raise GraphError("adam_graph: no parameter tensors")
    b1, b2 = betas
    b = GraphBuilder()

    def c(x):
        return b.const(np.asarray(x, dtype))

    lr, eps = (b.input(n, (), dtype) for n in HYPER)
    outs = []
    for k, shape in enumerate(shapes):
        p, g, m, v = (b.input(f"{n}{k}", tuple(shape), dtype) for n in "pgmv")
        m2 = b.add(b.mul(c(b1), m), b.mul(c(1 - b1), g), name=f"m{k}_new")
        v2 = b.add(b.mul(c(b2), v), b.mul(c(1 - b2), b.square(g)), name=f"v{k}_new")
        p2 = b.sub(p, b.mul(lr, b.div(m2, b.add(b.sqrt(v2), eps))), name=f"p{k}_new")
        outs += [p2, m2, v2]
    return b.build(outs)


def bias_corrected(lr: float, betas: tuple[float, float], eps: float, step: int) -> tuple[float, float]:
    """(lr_t, eps_t) for step `step` (from 1) such that p - lr_t m / (sqrt(v) + eps_t) is
    torch.optim.Adam's p - lr / (1 - b1^t) m / (sqrt(v) / sqrt(1 - b2^t) + eps)."""
    b1, b2 = betas
    root = math.sqrt(1 - b2 ** step)
    return lr * root / (1 - b1 ** step), eps * root


class MultiTensorAdam:
    """Adam (torch.optim.Adam's rule, without weight decay or amsgrad) over a fixed list of
    parameter shapes, compiled once for `target`; `step` updates the tensors in place.

    horizontal=False keeps one launch a tensor (to compare against)."""

    def __init__(self, shapes: Sequence[Shape], target="llvm", lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8, dtype: str = "float32",
                 horizontal: bool = True):
        self.shapes = [tuple(s) for s in shapes]
        self.lr, self.betas, self.eps, self.dtype = lr, tuple(betas), eps, dtype
        self.steps = 0
        self.graph = adam_graph(self.shapes, self.betas, dtype)
        self.compiled = build(self.graph, target, options=BuildOptions(horizontal=horizontal, horizontal_waves=None))

    @property
    def launches(self) -> int:
        return self.compiled.num_kernels

    def step(self, params: Sequence, grads: Sequence, ms: Sequence, vs: Sequence, stream=None) -> None:
        """One step, in place: params, ms and vs are overwritten (numpy arrays, or device tensors
        on the target's device, with `stream` a CUDA stream for the latter)."""
        self.steps += 1
        lr, eps = bias_corrected(self.lr, self.betas, self.eps, self.steps)
        self.update(params, grads, ms, vs, np.asarray(lr, self.dtype), np.asarray(eps, self.dtype), stream)

    def update(self, params: Sequence, grads: Sequence, ms: Sequence, vs: Sequence, lr: Any, eps: Any,
               stream: Optional[Any] = None) -> None:
        """The update with this lr and eps as given (0-d arrays, or 0-d device tensors: then the
        launch needs no copy from the host, and a CUDA graph can capture it), counting no step."""
        if not len(params) == len(grads) == len(ms) == len(vs) == len(self.shapes):
            raise GraphError(f"MultiTensorAdam.step: {len(self.shapes)} tensors each of params, grads, m and v, got "
                             f"{len(params)}, {len(grads)}, {len(ms)}, {len(vs)}")
        feeds = {"lr": lr, "eps": eps}
        for k, arrays in enumerate(zip(params, grads, ms, vs)):
            feeds.update({f"{n}{k}": a for n, a in zip("pgmv", arrays)})
        out = [a for k in range(len(self.shapes)) for a in (params[k], ms[k], vs[k])]
        self.compiled.run(feeds, out=out, **({"stream": stream} if stream is not None else {}))
