"""Optimizer steps over many parameter tensors of different shapes, as few launches (PyTorch's
multi-tensor `foreach` / fused Adam).

`adam_graph` is one graph holding an Adam update (p, g, m, v -> p', m', v', one multi-output
elementwise kernel each, see fusion) per parameter tensor; `MultiTensorAdam` builds it once with
horizontal fusion (codegen/horizontal.py), so the small tensors' updates share launches, and
steps the tensors in place: each output is written over its input, which an elementwise kernel
may do (every element is read before it is written, by the same thread).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .driver import build
from .errors import GraphError
from .graph.ir import Graph, GraphBuilder
from .options import BuildOptions

Shape = Sequence[int]


def adam_graph(shapes: Sequence[Shape], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
               eps: float = 1e-8, dtype: str = "float32") -> Graph:
    """Inputs p{k}, g{k}, m{k}, v{k} per tensor k; outputs p{k}_new, m{k}_new, v{k}_new in
    that order, tensor after tensor (Adam without bias correction, which a caller folds into lr)."""
    if not shapes:
        raise GraphError("adam_graph: no parameter tensors")
    b1, b2 = betas
    b = GraphBuilder()

    def c(x):
        return b.const(np.asarray(x, dtype))

    outs = []
    for k, shape in enumerate(shapes):
        p, g, m, v = (b.input(f"{n}{k}", tuple(shape), dtype) for n in "pgmv")
        m2 = b.add(b.mul(c(b1), m), b.mul(c(1 - b1), g), name=f"m{k}_new")
        v2 = b.add(b.mul(c(b2), v), b.mul(c(1 - b2), b.square(g)), name=f"v{k}_new")
        p2 = b.sub(p, b.mul(c(lr), b.div(m2, b.add(b.sqrt(v2), c(eps)))), name=f"p{k}_new")
        outs += [p2, m2, v2]
    return b.build(outs)


class MultiTensorAdam:
    """Adam over a fixed list of parameter shapes, compiled once for `target`."""

    def __init__(self, shapes: Sequence[Shape], target="llvm", lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8, dtype: str = "float32",
                 horizontal: bool = True):
        self.shapes = [tuple(s) for s in shapes]
        self.graph = adam_graph(self.shapes, lr, betas, eps, dtype)
        self.compiled = build(self.graph, target, options=BuildOptions(horizontal=horizontal))

    @property
    def launches(self) -> int:
        return self.compiled.num_kernels

    def step(self, params: Sequence, grads: Sequence, ms: Sequence, vs: Sequence, stream=None) -> None:
        """One step, in place: params, ms and vs are overwritten (numpy arrays, or device tensors
        on the target's device, with `stream` a CUDA stream for the latter)."""
        if not len(params) == len(grads) == len(ms) == len(vs) == len(self.shapes):
            raise GraphError(f"MultiTensorAdam.step: {len(self.shapes)} tensors each of params, grads, m and v, got "
                             f"{len(params)}, {len(grads)}, {len(ms)}, {len(vs)}")
        feeds = {}
        for k, arrays in enumerate(zip(params, grads, ms, vs)):
            feeds.update({f"{n}{k}": a for n, a in zip("pgmv", arrays)})
        out = [a for k in range(len(self.shapes)) for a in (params[k], ms[k], vs[k])]
        self.compiled.run(feeds, out=out, **({"stream": stream} if stream is not None else {}))
