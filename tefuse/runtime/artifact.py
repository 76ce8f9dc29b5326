"""Saved compiled graphs: kernels as shared libraries, a JSON plan and the constants.

Why: building a whole network takes minutes with tuning; a saved artefact loads in
milliseconds and runs through the same `CompiledGraph` executor, compiling nothing.

Layout (a directory, or the same files in one tar archive):
    plan.json        format version, target, graph nodes (name, op, inputs, attrs, shape,
                     dtype), graph inputs/outputs, kernels in run order with their
                     parameter and output node names
    constants.npz    the graph constants, keyed c0, c1, ... (names live in plan.json)
    kernels/kNNN.so  each kernel's `module.export_library(...)`
    kernels/kNNN.tir the lowered TIR of each kernel (for `source("tir")`)
    kernels/kNNN.src its generated CUDA source or AMDGPU assembly, when it has one (for `source()`)

A ROCm artefact saves without a GPU (its code objects are inside kNNN.so) but loads only where
TVM has its ROCm runtime; elsewhere `load` says so in one line.
"""
from __future__ import annotations

import json
import logging
import math
import os
import re
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np
import tvm

from .kernel import CompiledKernel
from ..errors import TefuseError
from ..fusion import FusedGroup
from ..graph.ir import CONST, Graph, Node
from ..ops import OpPattern
from .executor import CompiledGraph

log = logging.getLogger(__name__)

FORMAT, VERSION = "tefuse-artifact", 1
_RUNTIME = {"hip": "ROCm (HIP)", "cuda": "CUDA", "rocm": "ROCm"}
PathLike = Union[str, os.PathLike]


class ArtifactError(TefuseError, ValueError):
    """A saved artefact is missing, malformed, or from an incompatible version."""


@dataclass(frozen=True)
class ArtifactInfo:
    """What `save` wrote: where, how many kernels, and in which form."""

    path: Path
    num_kernels: int
    num_constants: int
    is_directory: bool


def _jsonable(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, float) and math.isnan(v):
        return "nan"
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(v)


def _plan(cg: CompiledGraph) -> tuple[dict, dict[str, np.ndarray]]:
    consts: dict[str, np.ndarray] = {}
    nodes = []
    for n in cg.graph.nodes:
        entry = {"name": n.name, "op": n.op, "inputs": [i.name for i in n.inputs],
                 "attrs": _jsonable(n.attrs), "shape": list(n.shape), "dtype": n.dtype}
        if n.op == CONST:
            key = f"c{len(consts)}"
            consts[key] = np.asarray(n.value)
            entry["const"] = key
        nodes.append(entry)
    kernels = []
    for k, kern in enumerate(cg.kernels):
        g = kern.group
        kernels.append({
            "file": f"kernels/k{k:03d}.so", "tir_file": f"kernels/k{k:03d}.tir",
            "source_file": f"kernels/k{k:03d}.src" if kern.device_source else None,
            "params": [p.name for p in kern.params], "outputs": [o.name for o in kern.outputs],
            "group": {"index": g.index, "nodes": [n.name for n in g.nodes],
                      "inputs": [n.name for n in g.inputs], "outputs": [n.name for n in g.outputs],
                      "pattern": int(g.pattern), "anchor": g.anchor.name if g.anchor else None,
                      "prologue": [n.name for n in g.prologue]},
            "workload": kern.workload, "template": kern.template, "config_index": kern.config_index,
            "config_source": kern.config_source, "build_seconds": kern.build_seconds,
        })
    plan = {"format": FORMAT, "version": VERSION, "target": json.loads(str(cg.target)),
            "inputs": [i.name for i in cg.graph.inputs], "outputs": [o.name for o in cg.graph.outputs],
            "nodes": nodes, "kernels": kernels}
    return plan, consts


def _write_dir(cg: CompiledGraph, root: Path) -> tuple[int, int]:
    plan, consts = _plan(cg)
    (root / "kernels").mkdir(parents=True, exist_ok=True)
    for kern, entry in zip(cg.kernels, plan["kernels"]):
        kern.module.export_library(str(root / entry["file"]))
        (root / entry["tir_file"]).write_text(kern.tir)
        if entry["source_file"]:
            (root / entry["source_file"]).write_text(kern.device_source)
    np.savez(root / "constants.npz", **consts)
    (root / "plan.json").write_text(json.dumps(plan, indent=1))
    return len(plan["kernels"]), len(consts)


def save(cg: CompiledGraph, path: PathLike, *, as_directory: Optional[bool] = None) -> ArtifactInfo:
    """Save a compiled graph; a tar file unless `path` is (or ends like) a directory."""
    path = Path(path)
    if as_directory is None:
        as_directory = path.is_dir() or str(path).endswith(os.sep)
    if as_directory:
        nk, nc = _write_dir(cg, path)
    else:
        with tempfile.TemporaryDirectory(prefix="tefuse-save-") as tmp:
            nk, nc = _write_dir(cg, Path(tmp))
            path.parent.mkdir(parents=True, exist_ok=True)
            part = path.with_name(path.name + ".part")
            with tarfile.open(part, "w") as tar:
                for f in sorted(Path(tmp).rglob("*")):
                    tar.add(f, arcname=str(f.relative_to(tmp)), recursive=False)
            os.replace(part, path)
    log.info("saved %d kernels and %d constants to %s", nk, nc, path)
    return ArtifactInfo(path, nk, nc, as_directory)


def _read_plan(root: Path) -> dict:
    try:
        plan = json.loads((root / "plan.json").read_text())
    except FileNotFoundError:
        raise ArtifactError(f"{root}: no plan.json (not a tefuse artefact)") from None
    if plan.get("format") != FORMAT or plan.get("version") != VERSION:
        raise ArtifactError(f"{root}: format {plan.get('format')!r} version {plan.get('version')!r}; "
                            f"this tefuse reads {FORMAT!r} version {VERSION}")
    return plan


def _graph(plan: dict, consts) -> Graph:
    by_name: dict[str, Node] = {}
    nodes = []
    for e in plan["nodes"]:
        value = np.asarray(consts[e["const"]]) if "const" in e else None
        n = Node(e["name"], e["op"], [by_name[i] for i in e["inputs"]], dict(e["attrs"]),
                 tuple(e["shape"]), e["dtype"], value)
        by_name[n.name] = n
        nodes.append(n)
    return Graph([by_name[i] for i in plan["inputs"]], [by_name[o] for o in plan["outputs"]], nodes)


def _kernel(entry: dict, root: Path, by_name: dict[str, Node]) -> CompiledKernel:
    g = entry["group"]
    names = lambda xs: [by_name[x] for x in xs]  # noqa: E731
    group = FusedGroup(g["index"], names(g["nodes"]), names(g["inputs"]), names(g["outputs"]),
                       OpPattern(g["pattern"]), by_name[g["anchor"]] if g["anchor"] else None,
                       names(g["prologue"]))
    lib = root / entry["file"]
    if not lib.exists():
        raise ArtifactError(f"artefact kernel {lib.name} is missing")
    try:
        module = tvm.runtime.load_module(str(lib))
    except Exception as e:  # noqa: BLE001 - TVM raises RuntimeError/TVMError/OSError
        m = re.search(r"created using \{(\w+)\} but a loader of that name is not registered", str(e))
        if m:  # e.g. a ROCm artefact: TVM without its ROCm runtime has no "hip" loader
            raise ArtifactError(f"{lib.name} holds {_RUNTIME.get(m.group(1), m.group(1))} device code and this "
                                f"TVM has no runtime for it (ffi.Module.load_from_bytes.{m.group(1)}); "
                                f"load the artefact where TVM is built with it") from None
        raise
    tir_path = root / entry["tir_file"]
    tir = tir_path.read_text() if tir_path.exists() else ""
    src_path = root / entry["source_file"] if entry.get("source_file") else None
    src = src_path.read_text() if src_path is not None and src_path.exists() else ""
    return CompiledKernel(group, names(entry["params"]), names(entry["outputs"]), module, tir,
                          entry["workload"], entry["template"], entry["config_index"],
                          entry["config_source"], entry["build_seconds"], from_cache=True,
                          device_source=src)


def _load_dir(root: Path, device_index: int) -> CompiledGraph:
    plan = _read_plan(root)
    with np.load(root / "constants.npz", allow_pickle=False) as z:
        consts = {k: z[k] for k in z.files}
    graph = _graph(plan, consts)
    by_name = {n.name: n for n in graph.nodes}
    kernels = [_kernel(e, root, by_name) for e in plan["kernels"]]
    target = tvm.target.Target(plan["target"])
    return CompiledGraph(graph, target, kernels, device_index)


def load(path: PathLike, *, device_index: int = 0) -> CompiledGraph:
    """Load a saved artefact (directory or tar) into a runnable CompiledGraph; compiles nothing."""
    path = Path(path)
    if path.is_dir():
        cg = _load_dir(path, device_index)
    elif path.is_file():
        if not tarfile.is_tarfile(path):
            raise ArtifactError(f"{path}: neither a directory nor a tar archive")
        tmp = tempfile.mkdtemp(prefix="tefuse-load-")
        try:
            with tarfile.open(path) as tar:
                tar.extractall(tmp, filter="data")
            cg = _load_dir(Path(tmp), device_index)  # libraries stay mapped after the files go
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    else:
        raise ArtifactError(f"no artefact at {path}")
    log.info("loaded %d kernels from %s", cg.num_kernels, path)
    return cg
