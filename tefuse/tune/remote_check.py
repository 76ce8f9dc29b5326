"""Checking a candidate's outputs on the RPC server that computed them.

TVM's RPC moves about 75 MB/s (its serialization, not the socket: loopback carries 9 GB/s), so
copying a candidate's outputs back for `measure.check_outputs` cost 43 ms for a 3.2 MB output and
11 ms for the average ResNet-50 kernel's, while a local device copies them in 0.2 ms. A server
held a candidate 0.14-0.15 s against a local GPU's 0.12 s, and two servers gave 1.65x one local
GPU. Here the reference outputs stay on the server, a small kernel built for the task's target
counts the elements `check_outputs` would call different, and only the counts (one int32 per
1024 elements) come back; the outputs are copied only when some differ, for the message.

The counter is built for an output's type and rank, its shape and tolerance being call
arguments: built once and kept in the user cache, loaded once a session, where one a workload
cost a device compile each time a server readied a workload.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import threading
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from .measure import ArgSpec, bounds, check_outputs, last_line

log = logging.getLogger(__name__)

ROW = 1024  # elements one count covers


def _rows(shape) -> int:
    """The counts of an output of `shape`: one per ROW elements."""
    return -(-max(1, int(np.prod(shape))) // ROW)


def _differs(g, r, dtype: str, dims: list, atol, rtol, rows):
    """(i, j) -> 1 where output element j * rows + i differs from the reference, else 0: by
    more than atol + rtol * |reference| (np.isclose's rule; call arguments, `tolerance`'s)."""
    from tvm import tirx as tir

    strides = [tir.const(1, "int64")]  # row-major: each dim's stride, the last's first
    for d in reversed(dims[1:]):
        strides.append(strides[-1] * d)
    strides.reverse()
    n = strides[0] * dims[0] if dims else tir.const(1, "int64")

    def at(i, j):
        flat = j * rows + i  # neighbouring rows (threads) read neighbouring elements
        at_n = tir.min(flat, n - 1)
        # each index from the flat one alone: nested divisions of symbolic dims cost the
        # simplifier time exponential in the rank
        idx = tuple(tir.floormod(tir.floordiv(at_n, st), d) for st, d in zip(strides, dims))
        a, b = g[idx], r[idx]
        if dtype.startswith(("int", "uint", "bool")):
            diff = a != b
        else:  # np.isclose(a, b, rtol, atol, equal_nan=True), negated
            a, b = a.astype("float64"), b.astype("float64")  # as np.isclose computes
            na, nb = tir.isnan(a), tir.isnan(b)
            # an infinity is close only to itself (np.isclose; the bound below is inf there)
            diff = tir.any(tir.all(na, tir.Not(nb)), tir.all(nb, tir.Not(na)),
                           tir.all(tir.Not(na), tir.Not(nb), a != b,
                                   tir.any(tir.isinf(a), tir.isinf(b),
                                           tir.abs(a - b) > atol + rtol * tir.abs(b))))
        return tir.Select(tir.all(flat < n, diff), 1, 0)

    return at


def mismatch_counter(dtype: str, ndim: int, target):
    """A module whose 'main'(got, ref, atol, rtol, counts) sets counts[i] to how many of the
    elements i, i + rows, i + 2 rows, ... of `got` differ from `ref` by `check_outputs`' rule
    (atol and rtol: `measure.bounds`), rows being counts' length, `_rows(shape)`. Any shape of
    `ndim` dimensions: one module serves every output of that type and rank, so a tuning run
    compiles a few, not one a workload."""
    import tvm
    from tvm import te

    dims = [te.var(f"d{i}", "int64") for i in range(ndim)]
    g, r = te.placeholder(dims, dtype, "g"), te.placeholder(dims, dtype, "r")
    atol, rtol, rows = te.var("atol", "float64"), te.var("rtol", "float64"), te.var("rows", "int64")
    differs = _differs(g, r, dtype, dims, atol, rtol, rows)
    j = te.reduce_axis((0, ROW), "j")
    counts = te.compute((rows,), lambda i: te.sum(differs(i, j), axis=j), name="n")
    mod = tvm.IRModule({"main": te.create_prim_func([g, r, atol, rtol, counts]).with_attr("global_symbol", "main")})
    target = _target(target)
    if target.kind.name != "llvm":
        from tvm.s_tir import dlight as dl

        with target:
            mod = dl.ApplyDefaultSchedule(dl.gpu.Reduction(), dl.gpu.GeneralReduction(), dl.gpu.Fallback())(mod)
    return tvm.compile(mod, target=target)


def _target(target):
    """A target name, dict or exported target (a TVM Map: RunSpec.target) as a Target, its device
    compiler the one builds use (make_target)."""
    import tvm

    from ..target import make_target

    if isinstance(target, tvm.target.Target):
        return target
    return make_target(target if isinstance(target, str) else dict(target))


_LIBRARIES_LOCK = threading.Lock()  # slots of one process share the counters
_SOURCE = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]  # what a counter computes


def counter_library(dtype: str, ndim: int, target) -> str:
    """The exported library of mismatch_counter(dtype, ndim, target), kept in the user cache
    (paths.check_kernel_dir) by its type, rank, target, this module's source and TVM's version:
    built once, written whole (a temporary name, then renamed), so no reader sees a part."""
    import tvm

    from ..paths import check_kernel_dir

    key = json.dumps([dtype, ndim, str(target), _SOURCE, tvm.__version__])
    path = check_kernel_dir() / f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.so"
    with _LIBRARIES_LOCK:
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
                part = os.path.join(tmp, path.name)
                mismatch_counter(dtype, ndim, target).export_library(part)
                os.replace(part, path)
    return str(path)


def load_counter(load: Callable[[str], object], dtype: str, ndim: int, target):
    """The counter of outputs of `dtype` and rank `ndim` for `target` (a name, dict or exported
    target), built into the user cache where missing, as `load` loads a library file."""
    return load(counter_library(dtype, ndim, _target(target)))


def remote_check(load: Callable[[str], object], dev, outputs: list[ArgSpec], ref: list[np.ndarray],
                 target, refs: Optional[list] = None, rounding: Optional[str] = None) -> Callable[[list], Optional[str]]:
    """outs -> what differs, or None: the outputs checked against `ref` on the device `dev` of a
    session whose `load` uploads and loads a library file (the counters' libraries are the same
    for every workload of a type and rank: a `load` that keeps what it loaded sends each once).
    `refs`: the reference outputs where the server computed them (else `ref` is copied there once).
    `rounding`: RunSpec.rounding, for the tolerance."""
    import tvm

    target = _target(target)
    counters = [load_counter(load, o.dtype, len(o.shape), target)["main"] for o in outputs]
    tolerances = [bounds(r, rounding) for r in ref]  # (atol, rtol) an output, as check_outputs takes them
    refs = refs if refs is not None else [tvm.runtime.tensor(r, dev) for r in ref]
    counts = [tvm.runtime.empty((_rows(o.shape),), "int32", dev) for o in outputs]
    sized = [int(np.prod(o.shape)) > 0 for o in outputs]  # an empty output has nothing to differ

    def check(outs: list) -> Optional[str]:
        try:
            for count, out, r, (atol, rtol), n, has in zip(counters, outs, refs, tolerances, counts, sized):
                if has:
                    count(out, r, atol, rtol, n)
            differ = any(int(c.numpy().sum()) for c, has in zip(counts, sized) if has)
        except Exception as e:  # noqa: BLE001 - the counter failing: the outputs checked here, as before
            log.warning("output check on the server failed (%s): checked here", last_line(e))
            differ = True
        if not differ:
            return None
        # some differ: the outputs come back, and the message names the first difference
        msg = check_outputs([o.numpy() for o in outs], ref, rounding)
        if msg is None:
            log.info("the server's output check counted differences the host's does not")
        return msg

    return check
