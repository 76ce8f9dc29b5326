"""Saved compiled graphs: kernels as shared libraries, a JSON plan and the constants.

Why: building a whole network takes minutes with tuning; a saved artefact loads in
milliseconds and runs through the same `CompiledGraph` executor, compiling nothing.

Layout of one compiled graph (a directory, or the same files in one tar archive):
    plan.json        format version, the tefuse and TVM versions that wrote it, target, graph
                     nodes (name, op, inputs, attrs, shape, dtype), graph inputs/outputs,
                     kernels in run order with their parameter and output node names, an int8
                     build's calibration (graph/calibration.py), the size and sha256 of every
                     other file, and its own checksum
    constants.npz    the graph constants, keyed c0, c1, ... (names live in plan.json)
    kernels/kNNN.so  each kernel's `module.export_library(...)`
    kernels/kNNN.tir the lowered TIR of each kernel (for `source("tir")`)
    kernels/kNNN.src its generated CUDA source or AMDGPU assembly, when it has one (for `source()`)

A ProfiledGraph (batch profiles, version 3) saves each profile's graph in that layout in a
folder `batch<N>/`, under a plan.json that lists the profiles ({"batch": N, "dir": "batch<N>"}),
records the sha256 of each profile's plan.json and its own checksum; every profile is checked as
a whole artefact is, and `load` gives a ProfiledGraph back. Version 2 artefacts (one graph, the
same layout as version 3's) still load. A graph built over symbolic dims (version 4) saves a
symbolic dim of a shape as its name or as its expression ([op, a, b]) and each name's range in
plan.json's "dims" ("N": "1:8:32"), so the loaded graph runs at any size in them. With size
buckets (graph/buckets.py) it also records each dim's buckets' upper ends ("buckets") and, in a
kernel's entry, its size variants ("variants": each distinct variant's files, as a kernel's, and
the bucket keys it serves; a split-K pair's ("split") its two kernels' files, which of the
kernel's arguments each takes and its scratch's shape); an artefact without them loads as one
bucket a dim, as before.

A ROCm artefact saves without a GPU (its code objects are inside kNNN.so) but loads only where
TVM has its ROCm runtime; elsewhere `load` says so in one line.

Loading refuses, with an ArtifactError naming the file, an artefact from another tefuse or TVM
version (a kernel library is tied to the TVM runtime that built it), a plan.json that is not
JSON, lacks a field or was edited (its checksum), a missing or damaged member (every file's
size and sha256 are checked before use: a truncated library must never reach dlopen, where it
would SIGBUS), missing constants or constants whose shape or dtype differ from the plan, and a
truncated tar archive.
"""
from __future__ import annotations

import hashlib
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

from .kernel import CompiledKernel, SplitKernel, Variant, variant_identity
from ..errors import DynamicShapeError, GraphError, TefuseError
from ..fusion import FusedGroup
from ..graph.calibration import Calibration
from ..graph.buckets import BucketPlan, bucket_plan
from ..graph.dims import dim_from_json, dim_to_json, dim_vars, is_symbolic, parse_range
from ..graph.ir import CONST, Graph, Node
from ..ops import OpPattern
from .executor import CompiledGraph
from .profiles import Profile, ProfiledGraph

log = logging.getLogger(__name__)

FORMAT, VERSION = "tefuse-artifact", 3  # 2: versions, member checksums, plan checksum; 3: batch profiles
SYMBOLIC_VERSION = 4  # a graph with symbolic dims (a shape's dim a name or an expression, "dims": the ranges)
READS = (2, 3, 4)  # version 2 is version 3 without profiles, 3 is 4 without symbolic dims
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
    batch_sizes: tuple[int, ...] = ()  # the profiles' batch sizes; () for one graph


def _jsonable(v: Any) -> Any:
    if is_symbolic(v):  # a dim expression in an attr (a reshape's target over symbolic dims)
        return {"dim": dim_to_json(v)}
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
                 "attrs": _jsonable(n.attrs), "shape": [dim_to_json(d) for d in n.shape], "dtype": n.dtype}
        if n.op == CONST:
            key = f"c{len(consts)}"
            consts[key] = np.asarray(n.value)
            entry["const"] = key
        nodes.append(entry)
    kernels = []
    for k, kern in enumerate(cg.kernels):
        g = kern.group
        entry = {
            **_module_entry(f"kernels/k{k:03d}", kern),
            "params": [p.name for p in kern.params], "outputs": [o.name for o in kern.outputs],
            "group": {"index": g.index, "nodes": [n.name for n in g.nodes],
                      "inputs": [n.name for n in g.inputs], "outputs": [n.name for n in g.outputs],
                      "pattern": int(g.pattern), "anchor": g.anchor.name if g.anchor else None,
                      "prologue": [n.name for n in g.prologue]},
        }
        variants = _variant_entries(k, cg.variants.get(k, {}))
        if variants:
            entry["variants"] = variants
        kernels.append(entry)
    from ..version import __version__

    plan = {"format": FORMAT, "version": SYMBOLIC_VERSION if cg.dim_ranges else VERSION,
            "tefuse_version": __version__, "tvm_version": tvm.__version__, "target": json.loads(str(cg.target)),
            "inputs": [i.name for i in cg.graph.inputs], "outputs": [o.name for o in cg.graph.outputs],
            "nodes": nodes, "kernels": kernels}
    if cg.calibration is not None:  # the int8 scales, reusable without the samples
        plan["calibration"] = json.loads(cg.calibration.to_json())
    if cg.dim_ranges:
        plan["dims"] = {k: str(r) for k, r in cg.dim_ranges.items()}
    if cg.buckets is not None and cg.buckets.size > 1:
        plan["buckets"] = cg.buckets.to_json()
    return plan, consts


def _module_entry(stem: str, kern: CompiledKernel) -> dict:
    """A compiled module's plan entry: its files under `stem` and what it was built from."""
    return {"file": f"{stem}.so", "tir_file": f"{stem}.tir",
            "source_file": f"{stem}.src" if kern.device_source else None,
            "workload": kern.workload, "template": kern.template, "config_index": kern.config_index,
            "config_source": kern.config_source, "build_seconds": kern.build_seconds}


def _variant_entries(k: int, variants: dict) -> list[dict]:
    """A kernel's size variants, each distinct one once with the bucket keys it serves; a
    split-K pair as its two kernels' entries, where each takes its arguments and its scratch."""
    keys: dict[tuple, list] = {}
    first: dict[tuple, Variant] = {}
    for key, v in variants.items():
        keys.setdefault(variant_identity(v), []).append(list(key))
        first.setdefault(variant_identity(v), v)
    out = []
    for j, (m, v) in enumerate(first.items()):
        if isinstance(v, SplitKernel):
            p = v.scratch
            out.append({"split": {"partial": _module_entry(f"kernels/k{k:03d}v{j}p", v.partial),
                                  "total": _module_entry(f"kernels/k{k:03d}v{j}t", v.total),
                                  "picks": [list(x) for x in v.picks],
                                  "scratch": {"name": p.name, "op": p.op, "shape": [dim_to_json(d) for d in p.shape],
                                              "dtype": p.dtype, "allocated": list(v.scratch_shape)}},
                        "buckets": keys[m]})
        else:
            out.append({**_module_entry(f"kernels/k{k:03d}v{j}", v), "buckets": keys[m]})
    return out


def _variant_kernels(cg: CompiledGraph, plan: dict) -> list[tuple[CompiledKernel, dict]]:
    """(compiled module, its plan entry) for every kernel's variants, in the plan's order (a
    split-K pair's two)."""
    out = []
    for k, entry in enumerate(plan["kernels"]):
        firsts: dict[tuple, Variant] = {}
        for v in cg.variants.get(k, {}).values():
            firsts.setdefault(variant_identity(v), v)
        for v, e in zip(firsts.values(), entry.get("variants", [])):
            if isinstance(v, SplitKernel):
                out.extend([(v.partial, e["split"]["partial"]), (v.total, e["split"]["total"])])
            else:
                out.append((v, e))
    return out


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _plan_checksum(plan: dict) -> str:
    """sha256 of the plan without its checksum field, in a canonical JSON form."""
    body = {k: v for k, v in plan.items() if k != "checksum"}
    return _sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())


def _write_library(kern: CompiledKernel, dest: Path) -> None:
    """The kernel's shared library: the bytes it was loaded from (a kernel-cache hit or an
    artefact: TVM cannot export a module loaded from a library), else an export."""
    if kern.library is not None:
        dest.write_bytes(kern.library)
    else:
        kern.module.export_library(str(dest))


def _seal(root: Path, plan: dict, members: list[str]) -> None:
    """Record every member's size and sha256 and the plan's own checksum; write plan.json."""
    plan["files"] = {}
    for m in members:
        data = (root / m).read_bytes()
        plan["files"][m] = {"size": len(data), "sha256": _sha256(data)}
    plan["checksum"] = _plan_checksum(plan)
    (root / "plan.json").write_text(json.dumps(plan, indent=1))


def _write_profiles(pg: ProfiledGraph, root: Path) -> tuple[int, int]:
    """Each profile as a whole artefact in batch<N>/, under an index plan that seals them."""
    from ..version import __version__

    nk = nc = 0
    entries = []
    for p in pg.profiles:
        k, c = _write_dir(p.graph, root / f"batch{p.batch}")
        nk, nc = nk + k, nc + c
        entries.append({"batch": p.batch, "dir": f"batch{p.batch}"})
    plan = {"format": FORMAT, "version": VERSION, "tefuse_version": __version__, "tvm_version": tvm.__version__,
            "target": json.loads(str(pg.target)), "profiles": entries}
    _seal(root, plan, [f"{e['dir']}/plan.json" for e in entries])
    return nk, nc


def _write_dir(cg: CompiledGraph, root: Path) -> tuple[int, int]:
    plan, consts = _plan(cg)
    (root / "kernels").mkdir(parents=True, exist_ok=True)
    written = [*zip(cg.kernels, plan["kernels"]), *_variant_kernels(cg, plan)]
    for kern, entry in written:
        _write_library(kern, root / entry["file"])
        (root / entry["tir_file"]).write_text(kern.tir)
        if entry["source_file"]:
            (root / entry["source_file"]).write_text(kern.device_source)
    np.savez(root / "constants.npz", **consts)
    members = ["constants.npz"] + [e[k] for _, e in written for k in ("file", "tir_file", "source_file")
                                   if e.get(k)]
    _seal(root, plan, members)
    return len(plan["kernels"]), len(consts)


def save(cg: Union[CompiledGraph, ProfiledGraph], path: PathLike, *,
         as_directory: Optional[bool] = None) -> ArtifactInfo:
    """Save a compiled graph, or all profiles of a ProfiledGraph; a tar file unless `path` is (or
    ends like) a directory."""
    path = Path(path)
    if as_directory is None:
        as_directory = path.is_dir() or str(path).endswith(os.sep)
    write = _write_profiles if isinstance(cg, ProfiledGraph) else _write_dir
    if as_directory:
        nk, nc = write(cg, path)
    else:
        with tempfile.TemporaryDirectory(prefix="tefuse-save-") as tmp:
            nk, nc = write(cg, Path(tmp))
            path.parent.mkdir(parents=True, exist_ok=True)
            part = path.with_name(path.name + ".part")
            with tarfile.open(part, "w") as tar:
                for f in sorted(Path(tmp).rglob("*")):
                    tar.add(f, arcname=str(f.relative_to(tmp)), recursive=False)
            os.replace(part, path)
    batches = cg.batch_sizes if isinstance(cg, ProfiledGraph) else ()
    log.info("saved %d kernels and %d constants to %s%s", nk, nc, path,
             f" (batch profiles {', '.join(map(str, batches))})" if batches else "")
    return ArtifactInfo(path, nk, nc, as_directory, batches)


def _read_plan(root: Path) -> dict:
    from ..version import __version__

    where = root / "plan.json"
    try:
        text = where.read_text()
    except FileNotFoundError:
        raise ArtifactError(f"{root}: no plan.json (not a tefuse artefact)") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ArtifactError(f"{where}: unreadable ({type(e).__name__}: {e})") from None
    try:
        plan = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise ArtifactError(f"{where}: not valid JSON ({str(e).splitlines()[0] if str(e) else type(e).__name__}); "
                            f"truncated or edited?") from None
    if not isinstance(plan, dict):
        raise ArtifactError(f"{where}: not a tefuse plan (a JSON {type(plan).__name__})")
    if plan.get("format") != FORMAT or plan.get("version") not in READS:
        raise ArtifactError(f"{where}: format {plan.get('format')!r} version {plan.get('version')!r}; "
                            f"this tefuse reads {FORMAT!r} versions {', '.join(map(str, READS[:-1]))} and {READS[-1]} "
                            f"(rebuild the artefact)")
    if plan.get("checksum") != _plan_checksum(plan):
        raise ArtifactError(f"{where}: checksum mismatch: the plan was edited or damaged after it was "
                            f"saved (rebuild the artefact)")
    saved = (plan.get("tefuse_version"), plan.get("tvm_version"))
    if saved != (__version__, tvm.__version__):
        raise ArtifactError(f"{where}: saved by tefuse {saved[0]} with TVM {saved[1]}; this is tefuse "
                            f"{__version__} with TVM {tvm.__version__}, whose runtime may not load its "
                            f"kernels (rebuild the artefact)")
    return plan


def _member(root: Path, plan: dict, name: str, required: bool = True) -> Optional[bytes]:
    """A member's bytes, checked against the plan's size and sha256 before anything uses them."""
    p = root / name
    rec = plan.get("files", {}).get(name)
    if rec is None:
        raise ArtifactError(f"{root / 'plan.json'}: no checksum recorded for {name}")
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        if not required:
            return None
        raise ArtifactError(f"{p}: missing from the artefact") from None
    except OSError as e:
        raise ArtifactError(f"{p}: unreadable ({e})") from None
    if len(data) != rec.get("size") or _sha256(data) != rec.get("sha256"):
        raise ArtifactError(f"{p}: checksum mismatch ({len(data)} bytes, {rec.get('size')} saved): truncated "
                            f"or damaged")
    return data


def _constants(root: Path, plan: dict) -> dict[str, np.ndarray]:
    import io
    import zipfile

    data = _member(root, plan, "constants.npz")
    where = root / "constants.npz"
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            consts = {k: z[k] for k in z.files}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
        raise ArtifactError(f"{where}: unreadable ({type(e).__name__}: {e})") from None
    for e in plan["nodes"]:
        if "const" not in e:
            continue
        v = consts.get(e["const"])
        if v is None:
            raise ArtifactError(f"{where}: constant {e['const']} of node {e['name']!r} is missing")
        if tuple(v.shape) != tuple(e["shape"]) or str(v.dtype) != e["dtype"]:
            raise ArtifactError(f"{where}: constant {e['const']} of node {e['name']!r} is {v.dtype}{list(v.shape)}, "
                                f"the plan says {e['dtype']}{list(e['shape'])}")
    return consts


def _attrs(v: Any, variables: dict) -> Any:
    """A node's saved attrs, dim expressions (`_jsonable`'s {"dim": ...}) made expressions again."""
    if isinstance(v, dict):
        if set(v) == {"dim"}:
            return dim_from_json(v["dim"], variables)
        return {k: _attrs(x, variables) for k, x in v.items()}
    if isinstance(v, list):
        return [_attrs(x, variables) for x in v]
    return v


def _graph(plan: dict, consts) -> Graph:
    by_name: dict[str, Node] = {}
    nodes = []
    variables: dict = {}  # dim name -> its one variable, shared by every shape naming it
    for e in plan["nodes"]:
        value = np.asarray(consts[e["const"]]) if "const" in e else None
        n = Node(e["name"], e["op"], [by_name[i] for i in e["inputs"]], _attrs(e["attrs"], variables),
                 tuple(dim_from_json(d, variables) for d in e["shape"]), e["dtype"], value)
        by_name[n.name] = n
        nodes.append(n)
    return Graph([by_name[i] for i in plan["inputs"]], [by_name[o] for o in plan["outputs"]], nodes)


def _kernel(entry: dict, root: Path, plan: dict, by_name: dict[str, Node]) -> CompiledKernel:
    g = entry["group"]
    names = lambda xs: [by_name[x] for x in xs]  # noqa: E731
    group = FusedGroup(g["index"], names(g["nodes"]), names(g["inputs"]), names(g["outputs"]),
                       OpPattern(g["pattern"]), by_name[g["anchor"]] if g["anchor"] else None,
                       names(g["prologue"]))
    return _module_kernel(entry, root, plan, group, names(entry["params"]), names(entry["outputs"]))


def _variants(kernel: CompiledKernel, entry: dict, root: Path, plan: dict,
              buckets: Optional[BucketPlan], variables: dict) -> dict[tuple, Variant]:
    """{bucket key: variant} of a kernel's entry: its group and parameters are the kernel's."""
    out: dict[tuple, Variant] = {}
    for v in entry.get("variants", []):
        if buckets is None:
            raise ArtifactError(f"{root / 'plan.json'}: kernel {entry['file']} has size variants and the "
                                f"plan no buckets")
        variant = (_split_variant(kernel, v["split"], root, plan, variables) if "split" in v
                   else _module_kernel(v, root, plan, kernel.group, kernel.params, kernel.outputs))
        for key in v["buckets"]:
            key = tuple(int(i) for i in key)
            if len(key) != len(buckets.dims) or any(not 0 <= i < len(b) for i, b in zip(key, buckets.buckets)):
                raise ArtifactError(f"{root / 'plan.json'}: variant {variant.group.name} names bucket {list(key)}, which "
                                    f"the plan's buckets {buckets.to_json()} do not have")
            out[key] = variant
    return out


def _split_variant(kernel: CompiledKernel, e: dict, root: Path, plan: dict, variables: dict) -> SplitKernel:
    """A saved split-K pair: each kernel's parameters are the kernel's arguments its picks name,
    the scratch (the partial sums' value) at the position past them."""
    s = e["scratch"]
    scratch = Node(s["name"], s["op"], [], {}, tuple(dim_from_json(d, variables) for d in s["shape"]), s["dtype"])
    args = [*kernel.params, *kernel.outputs, scratch]
    picks = tuple(tuple(int(i) for i in p) for p in e["picks"])
    if len(picks) != 2 or any(not 0 <= i < len(args) for p in picks for i in p):
        raise ArtifactError(f"{root / 'plan.json'}: split variant {e['partial']['file']} picks arguments "
                            f"{e['picks']} of the {len(args)} its kernel has")
    n_out = len(kernel.outputs)
    partial = _module_kernel(e["partial"], root, plan, kernel.group, [args[i] for i in picks[0][:-1]], [scratch])
    total = _module_kernel(e["total"], root, plan, kernel.group, [args[i] for i in picks[1][:-n_out]],
                           list(kernel.outputs))
    return SplitKernel(kernel.group, partial, total, picks, tuple(int(d) for d in s["allocated"]))


def _module_kernel(entry: dict, root: Path, plan: dict, group: FusedGroup, params: list,
                   outputs: list) -> CompiledKernel:
    lib = root / entry["file"]
    data = _member(root, plan, entry["file"])  # verified before dlopen: a truncated .so SIGBUSes
    try:
        module = tvm.runtime.load_module(str(lib))
    except Exception as e:  # noqa: BLE001 - TVM raises RuntimeError/TVMError/OSError
        m = re.search(r"created using \{(\w+)\} but a loader of that name is not registered", str(e))
        if m:  # e.g. a ROCm artefact: TVM without its ROCm runtime has no "hip" loader
            raise ArtifactError(f"{lib.name} holds {_RUNTIME.get(m.group(1), m.group(1))} device code and this "
                                f"TVM has no runtime for it (ffi.Module.load_from_bytes.{m.group(1)}); "
                                f"load the artefact where TVM is built with it") from None
        msg = (str(e).strip().splitlines() or [type(e).__name__])[-1]
        raise ArtifactError(f"{lib}: cannot be loaded ({msg})") from None
    tir = (_member(root, plan, entry["tir_file"], required=False) or b"").decode()
    src = (_member(root, plan, entry["source_file"], required=False) or b"").decode() if entry.get("source_file") else ""
    return CompiledKernel(group, params, outputs, module, tir,
                          entry["workload"], entry["template"], entry["config_index"],
                          entry["config_source"], entry["build_seconds"], from_cache=True,
                          device_source=src, library=data)


def _load_dir(root: Path, device_index: int) -> Union[CompiledGraph, ProfiledGraph]:
    plan = _read_plan(root)
    if "profiles" in plan:
        return _load_profiles(root, plan, device_index)
    return _load_graph(root, plan, device_index)


def _load_profiles(root: Path, plan: dict, device_index: int) -> ProfiledGraph:
    """Each profile's plan.json checked against the index's sha256, then loaded as a whole artefact."""
    where = root / "plan.json"
    entries = plan["profiles"]
    if plan.get("version", 0) < 3 or not isinstance(entries, list) or not entries:
        raise ArtifactError(f"{where}: malformed plan (profiles: {entries!r})")
    profiles = []
    for e in entries:
        try:
            batch, sub = int(e["batch"]), str(e["dir"])
        except (KeyError, TypeError, ValueError):
            raise ArtifactError(f"{where}: malformed profile entry {e!r}") from None
        if not re.fullmatch(r"batch[0-9]+", sub):  # a folder of this artefact, nothing outside it
            raise ArtifactError(f"{where}: profile folder {sub!r} is not one tefuse writes")
        _member(root, plan, f"{sub}/plan.json")
        sub_plan = _read_plan(root / sub)
        if "profiles" in sub_plan:
            raise ArtifactError(f"{root / sub / 'plan.json'}: a profile holds profiles")
        profiles.append(Profile(batch, _load_graph(root / sub, sub_plan, device_index)))
    try:
        return ProfiledGraph(tuple(profiles))
    except TefuseError as e:
        raise ArtifactError(f"{where}: {e}") from None


def _load_graph(root: Path, plan: dict, device_index: int) -> CompiledGraph:
    try:
        consts = _constants(root, plan)
        graph = _graph(plan, consts)
        by_name = {n.name: n for n in graph.nodes}
        kernels = [_kernel(e, root, plan, by_name) for e in plan["kernels"]]
        target = tvm.target.Target(plan["target"])
        ranges = {k: parse_range(v) for k, v in plan.get("dims", {}).items()}
        buckets = bucket_plan(ranges, plan["buckets"]) if "buckets" in plan else None
        variables = dim_vars([i.shape for i in graph.inputs])  # the graph's own, for a split's scratch
        variants = {k: v for k, v in ((k, _variants(kern, e, root, plan, buckets, variables))
                                      for k, (kern, e) in enumerate(zip(kernels, plan["kernels"]))) if v}
        calibration = (Calibration.from_json(json.dumps(plan["calibration"]), f"{root / 'plan.json'}")
                       if "calibration" in plan else None)
    except (ArtifactError, GraphError, DynamicShapeError) as e:
        raise ArtifactError(str(e)) from None
    except (KeyError, TypeError, IndexError, ValueError, AttributeError) as e:
        raise ArtifactError(f"{root / 'plan.json'}: malformed plan ({type(e).__name__}: {e})") from None
    cg = CompiledGraph(graph, target, kernels, device_index, dim_ranges=ranges, variants=variants, buckets=buckets)
    cg.calibration = calibration
    return cg


def load(path: PathLike, *, device_index: int = 0) -> Union[CompiledGraph, ProfiledGraph]:
    """Load a saved artefact (directory or tar) into a runnable CompiledGraph, or a ProfiledGraph
    when it was saved with batch profiles; compiles nothing."""
    path = Path(path)
    if path.is_dir():
        cg = _load_dir(path, device_index)
    elif path.is_file():
        if not tarfile.is_tarfile(path):
            raise ArtifactError(f"{path}: neither a directory nor a tar archive")
        tmp = tempfile.mkdtemp(prefix="tefuse-load-")
        try:
            try:
                with tarfile.open(path) as tar:
                    tar.extractall(tmp, filter="data")
            except (tarfile.TarError, EOFError, OSError) as e:
                raise ArtifactError(f"{path}: damaged tar archive ({type(e).__name__}: {e}); truncated?") from None
            try:
                cg = _load_dir(Path(tmp), device_index)  # libraries stay mapped after the files go
            except ArtifactError as e:  # name the archive and the member, not the temp dir
                raise ArtifactError(str(e).replace(tmp + os.sep, f"{path}:").replace(tmp, str(path))) from None
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    else:
        raise ArtifactError(f"no artefact at {path}")
    batches = cg.batch_sizes if isinstance(cg, ProfiledGraph) else ()
    log.info("loaded %d kernels from %s%s", cg.num_kernels, path,
             f" (batch profiles {', '.join(map(str, batches))})" if batches else "")
    return cg
