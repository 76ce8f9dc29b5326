"""Timers the benches share: a peer replayed as a CUDA graph (its kernels, no launch gaps), and
wall time with the device synchronised (what one call costs, launches included)."""
from __future__ import annotations

import contextlib
import fcntl
import logging
import time
from collections import Counter
from typing import Optional

import numpy as np


# calls of the timed function captured into one CUDA graph (`set_graph_calls`, the precision
# bench's --graph-calls). With one, a graph replayed back to back is timed at the rate graphs
# launch where its kernels are shorter than that: on the H100 tefuse's and cuDNN's microsecond
# convs both rose by about 1.8 us, to a floor near 5.3-6 us, in some processes and not in others.
# Several calls a graph time the GPU's work, launch gaps between the
# calls' kernels included.
GRAPH_CALLS = 1


def set_graph_calls(calls: int) -> None:
    """How many calls `time_graph` captures into one graph from now on (1: one, as before)."""
    global GRAPH_CALLS
    if int(calls) < 1:
        raise ValueError(f"graph calls must be 1 or more, not {calls}")
    GRAPH_CALLS = int(calls)


# a file whose exclusive lock a run holds while it times (`set_gpu_turn`, the precision bench's
# --gpu-turn): runs started together on one GPU export, build, check and compile side by side and
# take the GPU in turn for their timings alone. None: no lock (a run that has the GPU to itself).
GPU_TURN: Optional[str] = None
log = logging.getLogger(__name__)


def set_gpu_turn(path: Optional[str]) -> None:
    """Time from now on while holding an exclusive lock on `path` (None: without a lock)."""
    global GPU_TURN
    GPU_TURN = path


@contextlib.contextmanager
def gpu_turn():
    """The timings of the block taken while no other run holding the same GPU_TURN lock times
    (flock: released by the kernel if the process dies, so a crashed run blocks no one)."""
    if GPU_TURN is None:
        yield
        return
    with open(GPU_TURN, "a") as f:
        t0 = time.perf_counter()
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            log.info("GPU turn after %.0f s waiting", time.perf_counter() - t0)
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def time_graph(fn, repeat: int = 30, inner: int = 10, calls: int = 0) -> float:
    """Median ms of one call of `fn`: `calls` calls (0: GRAPH_CALLS) captured once as a torch CUDA
    graph, the graph replayed `inner` times per event pair."""
    calls = calls or GRAPH_CALLS
    if calls < 1:
        raise ValueError(f"graph calls must be 1 or more, not {calls}")
    import torch

    with torch.no_grad():
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(calls):
                fn()
        times = []
        for _ in range(repeat):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(inner):
                g.replay()
            e.record()
            torch.cuda.synchronize()
            times.append(s.elapsed_time(e) / (inner * calls))
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


def time_interleaved(fns, sync, warmup: int = 3, iters: int = 20) -> list[float]:
    """Median ms of each of `fns`, timed in turns (a call of each, then the next round), so that
    a clock change, a noisy neighbour or a warming cache weighs on all of them alike."""
    for _ in range(warmup):
        for fn in fns:
            fn()
    sync()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(iters):
        for k, fn in enumerate(fns):
            t = time.perf_counter()
            fn()
            sync()
            times[k].append(time.perf_counter() - t)
    return [1e3 * float(np.median(ts)) for ts in times]


def device_kernels(torch, fn, runs: int = 5, top: int = 16) -> list:
    """fn's `top` kernels by device time a call, [(kernel, launches a call, ms a call)], from
    torch.profiler (CUPTI: every kernel of the process, TVM's launches included) over `runs`
    eager calls: where a peer's time goes, and what a kernel takes apart from its launch."""
    from torch.profiler import ProfilerActivity, profile

    with torch.no_grad():
        fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(runs):
                fn()
            torch.cuda.synchronize()
    rows = []
    for e in prof.key_averages():
        us = getattr(e, "device_time_total", None)
        us = getattr(e, "cuda_time_total", 0) if us is None else us
        if us and e.count:
            rows.append((e.key[:120], round(e.count / runs, 2), round(us / runs / 1e3, 4)))
    rows.sort(key=lambda r: -r[2])
    return rows[:top]


def kernel_profile(kernels, times) -> list:
    """(group, template, device ms, config source) of each kernel given its time in seconds,
    slowest first: the rows of a bench's per-kernel profile. The source ("tuned", "predicted",
    "fallback") tells a slow kernel its records did not reach (a record keyed for another host's
    calibration) from a slow tuned one."""
    return sorted(((k.group.name, k.template, round(1e3 * t, 4), k.config_source) for k, t in zip(kernels, times)),
                  key=lambda r: -r[2])


def config_sources(kernels) -> dict:
    """How many of a build's kernels took their config from each source: a bench row's record
    coverage."""
    return dict(Counter(k.config_source for k in kernels))
