"""Workload keys: what a fused group computes, stable across runs and machines.

The key is the network config of MIOpen's find-db: a readable prefix (ops, anchor shape,
dtype) plus a hash of the canonical group signature (ops, attrs, shapes, dtypes, wiring).
"""
from __future__ import annotations

import hashlib
import json

import numpy as np

from ..fusion import FusedGroup
from ..graph.dims import dim_to_json, is_symbolic
from ..graph.ir import CONST


def _canon(v):
    if isinstance(v, (list, tuple)):
        return [_canon(x) for x in v]
    if isinstance(v, float):
        return float(f"{v:.9g}")
    if isinstance(v, (np.integer, np.floating)):
        return _canon(v.item())
    if is_symbolic(v):  # a symbolic dim: its name, or its expression as nested lists
        return ["dim", dim_to_json(v)]
    return v


def group_signature(group: FusedGroup) -> list:
    pos = {id(n): f"n{k}" for k, n in enumerate(group.nodes)}
    ext = {}
    for k, i in enumerate(group.inputs):
        # scalar constants are folded into the kernel, so their value is part of it
        ext[id(i)] = (f"c{_canon(float(i.value.reshape(-1)[0]))}" if i.op == CONST and i.value.size == 1
                      else f"i{k}")
    sig = [[f"i{k}", _canon(list(i.shape)), i.dtype] for k, i in enumerate(group.inputs)]
    for n in group.nodes:
        refs = [pos.get(id(i)) or ext[id(i)] for i in n.inputs]
        sig.append([n.op, refs, {k: _canon(v) for k, v in sorted(n.attrs.items())}, _canon(list(n.shape)), n.dtype])
    sig.append(["out", [pos[id(o)] for o in group.outputs]])
    return sig


def workload_key(group: FusedGroup) -> str:
    sig = json.dumps(group_signature(group), sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha1(sig.encode()).hexdigest()[:16]
    ref = group.anchor or group.outputs[0]
    shape = "x".join(map(str, ref.shape))
    ops = "+".join(n.op for n in group.nodes)
    if len(ops) > 60:
        ops = ops[:57] + "..."
    return f"{ops}|{shape}|{ref.dtype}|{digest}"
