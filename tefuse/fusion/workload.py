"""Workload keys: what a fused group computes, stable across runs and machines.

The key is the network config of MIOpen's find-db: a readable prefix (ops, anchor shape,
dtype) plus a hash of the canonical group signature (ops, attrs, shapes, dtypes, wiring).
A group with symbolic dims keys by their names; `workload_key(group, sizes)` keys it with the
dims at those sizes instead: the key of the same group built for fixed shapes, under which a
size bucket's variant looks up tuning records (graph/buckets.py).

A scalar constant is folded into the kernel, so its value is part of the workload key (two such
kernels are different code). `structure_key` leaves those values out: the kernels of one
structure differ only in the numbers they fold (a quantized model's scales, one set a layer), so
they share a config space and a config's speed, and a tuning record of one serves the others
(MIOpen's perf-db keys a problem by its configuration, not its data in the same way).
"""
from __future__ import annotations

import hashlib
import json

import numpy as np

from ..fusion import FusedGroup
from typing import Mapping, Optional

from ..graph.dims import dim_to_json, eval_dim, is_symbolic
from ..graph.ir import CONST


def _canon(v, sizes: Optional[Mapping[str, int]] = None):
    if isinstance(v, (list, tuple)):
        return [_canon(x, sizes) for x in v]
    if isinstance(v, float):
        return float(f"{v:.9g}")
    if isinstance(v, (np.integer, np.floating)):
        return _canon(v.item())
    if is_symbolic(v):  # a symbolic dim: its name, or its expression as nested lists; at `sizes`, its size
        return eval_dim(v, sizes) if sizes is not None else ["dim", dim_to_json(v)]
    return v


def group_signature(group: FusedGroup, sizes: Optional[Mapping[str, int]] = None, values: bool = True) -> list:
    """The group's canonical form; without `values`, its scalar constants' values left out."""
    pos = {id(n): f"n{k}" for k, n in enumerate(group.nodes)}
    ext = {}
    for k, i in enumerate(group.inputs):
        # scalar constants are folded into the kernel, so their value is part of it
        scalar = i.op == CONST and i.value.size == 1
        ext[id(i)] = (f"c{_canon(float(i.value.reshape(-1)[0]))}" if values else "c") if scalar else f"i{k}"
    sig = [[f"i{k}", _canon(list(i.shape), sizes), i.dtype] for k, i in enumerate(group.inputs)]
    for n in group.nodes:
        refs = [pos.get(id(i)) or ext[id(i)] for i in n.inputs]
        sig.append([n.op, refs, {k: _canon(v, sizes) for k, v in sorted(n.attrs.items())},
                    _canon(list(n.shape), sizes), n.dtype])
    sig.append(["out", [pos[id(o)] for o in group.outputs]])
    return sig


def workload_key(group: FusedGroup, sizes: Optional[Mapping[str, int]] = None) -> str:
    """The group's key; with `sizes` ({dim name: size}), its symbolic dims at those sizes."""
    return _key(group, sizes, True)


def structure_key(group: FusedGroup, sizes: Optional[Mapping[str, int]] = None) -> str:
    """The key of the group's structure (see the module): its workload key's form, the digest's
    signature without scalar constants' values, marked `s`."""
    return _key(group, sizes, False)


def _key(group: FusedGroup, sizes: Optional[Mapping[str, int]], values: bool) -> str:
    sig = json.dumps(group_signature(group, sizes, values), sort_keys=True, separators=(",", ":"))
    digest = ("" if values else "s") + hashlib.sha1(sig.encode()).hexdigest()[:16]
    ref = group.anchor or group.outputs[0]
    shape = "x".join(map(str, ref.shape if sizes is None else _canon(list(ref.shape), sizes)))
    ops = "+".join(n.op for n in group.nodes)
    if len(ops) > 60:
        ops = ops[:57] + "..."
    return f"{ops}|{shape}|{ref.dtype}|{digest}"
