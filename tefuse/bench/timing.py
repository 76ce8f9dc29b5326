"""Timers the benches share: a peer replayed as a CUDA graph (its kernels, no launch gaps), and
wall time with the device synchronised (what one call costs, launches included)."""
from __future__ import annotations

import time

import numpy as np


def time_graph(fn, repeat: int = 30, inner: int = 10) -> float:
    """Median ms of `fn` captured once as a torch CUDA graph and replayed `inner` times per event pair."""
    import torch

    with torch.no_grad():
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        times = []
        for _ in range(repeat):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(inner):
                g.replay()
            e.record()
            torch.cuda.synchronize()
            times.append(s.elapsed_time(e) / inner)
    return float(np.median(times))


def time_wall(fn, sync, warmup: int = 3, iters: int = 20) -> float:
    """Median ms of fn() with the device synchronised around each call."""
    for _ in range(warmup):
        fn()
    sync()
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t)
    return 1e3 * float(np.median(times))
