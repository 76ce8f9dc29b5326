"""Checking a candidate's outputs on the RPC server that computed them.

TVM's RPC moves about 75 MB/s (its serialization, not the socket: loopback carries 9 GB/s), so
copying a candidate's outputs back for `measure.check_outputs` cost 43 ms for a 3.2 MB output and
11 ms for the average ResNet-50 kernel's, while a local device copies them in 0.2 ms. A server
held a candidate 0.14-0.15 s against a local GPU's 0.12 s, and two servers gave 1.65x one local
GPU. Here the reference outputs stay on the server, a small kernel built for the task's target
counts the elements `check_outputs` would call different, and only the counts (one int32 per
1024 elements) come back; the outputs are copied only when some differ, for the message.
"""
from __future__ import annotations

import logging
import os
import tempfile
from typing import Callable, Optional

import numpy as np

from .measure import TOLERANCES, ArgSpec, check_outputs, last_line, output_scale

log = logging.getLogger(__name__)

ROW = 1024  # elements one count covers


def _rows(shape) -> int:
    """The counts of an output of `shape`: one per ROW elements."""
    return -(-max(1, int(np.prod(shape))) // ROW)


def _differs(g, r, dtype: str, shape: list[int], scale: float):
    """(i, j) -> 1 where output element j * rows + i differs from the reference, else 0."""
    from tvm import tirx as tir

    n, rows = max(1, int(np.prod(shape))), _rows(shape)

    def at(i, j):
        flat = j * rows + i  # neighbouring rows (threads) read neighbouring elements
        idx, rest = [], tir.min(flat, n - 1)
        for d in reversed(shape):
            idx.append(tir.floormod(rest, d))
            rest = tir.floordiv(rest, d)
        a, b = g[tuple(reversed(idx))], r[tuple(reversed(idx))]
        if dtype.startswith(("int", "uint", "bool")):
            diff = a != b
        else:  # np.isclose(a, b, rtol, atol * max(scale, 1), equal_nan=True), negated
            rtol, atol = TOLERANCES.get(dtype, (1e-3, 1e-4))
            a, b = a.astype("float64"), b.astype("float64")  # as np.isclose computes
            na, nb = tir.isnan(a), tir.isnan(b)
            diff = tir.any(tir.all(na, tir.Not(nb)), tir.all(nb, tir.Not(na)),
                           tir.all(tir.Not(na), tir.Not(nb), a != b,
                                   tir.abs(a - b) > atol * max(scale, 1.0) + rtol * tir.abs(b)))
        return tir.Select(tir.all(flat < n, diff), 1, 0)

    return rows, at


def mismatch_counter(outputs: list[ArgSpec], scales: list[float], target):
    """A module whose 'main'(got0, ref0, got1, ref1, ..., n0, n1, ...) sets n_k[i] to how many of
    output k's elements i, i + rows, i + 2 rows, ... differ from the reference by
    `check_outputs`' rule (its tolerance for the dtype, `scales` its reference magnitudes)."""
    import tvm
    from tvm import te

    params, counts = [], []
    for k, (o, scale) in enumerate(zip(outputs, scales)):
        shape = [int(d) for d in o.shape]
        g, r = te.placeholder(shape, o.dtype, f"g{k}"), te.placeholder(shape, o.dtype, f"r{k}")
        rows, differs = _differs(g, r, o.dtype, shape, scale)
        j = te.reduce_axis((0, ROW), f"j{k}")
        params += [g, r]
        counts.append(te.compute((rows,), _summed(differs, j), name=f"n{k}"))
    mod = tvm.IRModule({"main": te.create_prim_func(params + counts).with_attr("global_symbol", "main")})
    target = tvm.target.Target(target)
    if target.kind.name != "llvm":
        from tvm.s_tir import dlight as dl

        with target:
            mod = dl.ApplyDefaultSchedule(dl.gpu.Reduction(), dl.gpu.GeneralReduction(), dl.gpu.Fallback())(mod)
    return tvm.compile(mod, target=target)


def _summed(differs, j):
    from tvm import te

    return lambda i: te.sum(differs(i, j), axis=j)


def remote_check(load: Callable[[str], object], dev, outputs: list[ArgSpec], ref: list[np.ndarray],
                 target, refs: Optional[list] = None) -> Callable[[list], Optional[str]]:
    """outs -> what differs, or None: the outputs checked against `ref` on the device `dev` of a
    session whose `load` uploads and loads a library file. `refs`: the reference outputs where
    the server computed them (else `ref` is copied there once)."""
    import tvm

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "tefuse_check.so")  # (`load` uploads it under a name of its own)
        mismatch_counter(outputs, [output_scale(r) for r in ref], target).export_library(path)
        count = load(path)["main"]
    refs = refs if refs is not None else [tvm.runtime.tensor(r, dev) for r in ref]
    counts = [tvm.runtime.empty((_rows(o.shape),), "int32", dev) for o in outputs]

    def check(outs: list) -> Optional[str]:
        try:
            count(*[t for pair in zip(outs, refs) for t in pair], *counts)
            differ = any(int(c.numpy().sum()) for c in counts)
        except Exception as e:  # noqa: BLE001 - the counter failing: the outputs checked here, as before
            log.warning("output check on the server failed (%s): checked here", last_line(e))
            differ = True
        if not differ:
            return None
        # some differ: the outputs come back, and the message names the first difference
        msg = check_outputs([o.numpy() for o in outs], ref)
        if msg is None:
            log.info("the server's output check counted differences the host's does not")
        return msg

    return check
