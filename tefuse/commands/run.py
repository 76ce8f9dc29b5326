"""`tefuse run model.onnx`: import, fuse, build and run a whole ONNX network once.

Prints how the network was fused (kernels vs ONNX nodes, ops per kernel); with --check it
also runs onnxruntime on the same inputs and reports the max abs / rel error. A saved
artefact (`tefuse build model.onnx -o model.tefuse`) runs too, without recompiling.
"""
from __future__ import annotations

import argparse
import logging
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from ..errors import TefuseError
from ..frontend.reference import onnxruntime_outputs
from .build import add_db_options, open_databases

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Comparison:
    """Error of tefuse's output against a reference, per graph output."""

    name: str
    max_abs: float
    max_rel: float
    ok: bool


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="import an ONNX model, build it and run it (optionally check vs onnxruntime)")
    p.add_argument("model", help="model.onnx, or an artefact saved by `tefuse build -o`")
    p.add_argument("--target", "-t", default="llvm", help="llvm, cuda, cuda:sm_80 (default llvm)")
    p.add_argument("--input", "-i", action="append", default=[], metavar="NAME=FILE.npy",
                   help="input values from .npy files (repeatable); random values otherwise")
    p.add_argument("--shape", action="append", default=[], metavar="NAME=1x3x224x224",
                   help="fix an input's symbolic dims (repeatable)")
    p.add_argument("--check", action="store_true", help="compare with onnxruntime (CPU)")
    p.add_argument("--rtol", type=float, default=1e-3, help="--check tolerance (default 1e-3)")
    p.add_argument("--atol", type=float, default=1e-4, help="--check tolerance (default 1e-4)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (and --random-weights)")
    p.add_argument("--random-weights", action="store_true",
                   help="replace weights stored as constant fills (the ONNX zoo's light models) with "
                        "seeded random values, so that --check compares something")
    p.add_argument("--repeat", type=int, default=1, help="timed runs after the first (default 1)")
    p.add_argument("--verbose-groups", action="store_true",
                   help="list every fused group with its schedule (template, config, tuned or fallback)")
    add_db_options(p)
    p.set_defaults(func=run)


def _pairs(items: list[str], what: str) -> dict[str, str]:
    out = {}
    for it in items:
        name, sep, val = it.rpartition("=")
        if not sep or not name:
            raise TefuseError(f"{what} {it!r}: expected NAME=VALUE")
        out[name] = val
    return out


def _load_input(name: str, path: str) -> np.ndarray:
    """One --input NAME=FILE.npy, or a one-line TefuseError."""
    p = Path(path)
    if not p.is_file():
        raise TefuseError(f"--input {name}: no such file {path!r}")
    try:
        arr = np.load(p, allow_pickle=False)
    except Exception as e:  # noqa: BLE001 - numpy raises ValueError, EOFError, OSError...
        why = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise TefuseError(f"--input {name}: {path!r} is not a .npy array ({why})") from None
    if not isinstance(arr, np.ndarray):
        raise TefuseError(f"--input {name}: {path!r} is an .npz archive, not a .npy array")
    return arr


def _parse_shape(name: str, text: str) -> tuple[int, ...]:
    parts = text.lower().split("x")
    if not all(p.isdigit() and int(p) > 0 for p in parts):
        raise TefuseError(f"--shape {name}={text}: dims must be positive integers, e.g. 1x3x224x224")
    return tuple(int(p) for p in parts)


def _need_device(target: str) -> None:
    """`run` executes: a GPU target needs its device (one line instead of TVM's traceback)."""
    from ..target import has_gpu, make_target

    kind = make_target(target).kind.name
    if kind != "llvm" and not has_gpu(kind):
        raise TefuseError(f"target {target}: no {kind} device here (Device API {kind} is not enabled "
                          f"or no GPU is visible); use -t llvm")


def random_inputs(graph, seed: int = 0, given: Optional[dict[str, np.ndarray]] = None) -> dict[str, np.ndarray]:
    """Values for every graph input: the given ones, random for the rest (uniform [0, 1) floats)."""
    rng = np.random.default_rng(seed)
    feeds = dict(given or {})
    for i in graph.inputs:
        if i.name in feeds:
            continue
        if i.dtype.startswith("float"):
            feeds[i.name] = rng.random(i.shape, dtype=np.float32).astype(i.dtype)
        elif i.dtype == "bool":
            feeds[i.name] = rng.random(i.shape) > 0.5
        else:
            feeds[i.name] = rng.integers(0, 4, size=i.shape).astype(i.dtype)
    return feeds


def compare(names: list[str], got: list[np.ndarray], want: list[np.ndarray], rtol: float,
            atol: float) -> list[Comparison]:
    res = []
    for name, g, w in zip(names, got, want):
        g64, w64 = np.asarray(g, np.float64), np.asarray(w, np.float64)
        if g64.shape != w64.shape:
            res.append(Comparison(name, float("inf"), float("inf"), False))
            continue
        diff = np.abs(g64 - w64)
        max_abs = float(diff.max()) if diff.size else 0.0
        max_rel = float((diff / np.maximum(np.abs(w64), 1e-12)).max()) if diff.size else 0.0
        ok = bool(np.all(diff <= atol + rtol * np.abs(w64)))
        res.append(Comparison(name, max_abs, max_rel, ok))
    return res


def fusion_summary(cg, onnx_nodes: Optional[int], verbose: bool) -> str:
    """Kernels vs ONNX nodes and how many ops each kernel holds."""
    sizes = [len(k.group.nodes) for k in cg.kernels]
    ops = sum(sizes)
    head = f"{cg.num_kernels} kernels for {ops} tefuse ops"
    if onnx_nodes is not None:
        head += f" ({onnx_nodes} ONNX nodes)"
    hist: dict[int, int] = {}
    for s in sizes:
        hist[s] = hist.get(s, 0) + 1
    lines = [head, "ops per kernel: " + ", ".join(f"{n} op{'s' if n > 1 else ''} x{c}"
                                                  for n, c in sorted(hist.items()))]
    if verbose:
        lines += [f"  {k.group.describe()}  [{k.template} #{k.config_index}, {k.config_source}]"
                  for k in cg.kernels]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from ..driver import build
    from ..runtime import artifact

    given = {name: _load_input(name, f) for name, f in _pairs(args.input, "--input").items()}
    shapes = {name: _parse_shape(name, v) for name, v in _pairs(args.shape, "--shape").items()}
    _need_device(args.target)
    is_onnx = args.model.endswith(".onnx")
    onnx_nodes = None
    t0 = time.perf_counter()
    if is_onnx:
        from ..frontend.onnx import import_onnx
        from ..frontend.onnx.importer import load_model

        model = load_model(args.model)
        if args.random_weights:
            from ..frontend.randomize import randomize_constant_weights

            model, replaced = randomize_constant_weights(model, args.seed)
            print(f"random weights: {replaced} constant-fill weights replaced (seed {args.seed})")
        onnx_nodes = len(model.graph.node)
        init = {i.name for i in model.graph.initializer}
        input_names = {i.name for i in model.graph.input} - init
        shapes.update({k: v.shape for k, v in given.items() if k in input_names})
        graph = import_onnx(model, input_shapes=shapes or None)
        t1 = time.perf_counter()
        db, cache = open_databases(args)
        cg = build(graph, args.target, db=db, cache=cache, jobs=args.jobs)
        print(f"imported in {t1 - t0:.2f}s, built for {args.target} in {time.perf_counter() - t1:.1f}s")
    else:
        if args.check or args.random_weights:
            raise TefuseError("--check and --random-weights need the .onnx model, not an artefact")
        if not Path(args.model).is_file():
            raise TefuseError(f"no such model or artefact file: {args.model}")
        cg = artifact.load(args.model)
        print(f"loaded {args.model} in {time.perf_counter() - t0:.2f}s")
    print(fusion_summary(cg, onnx_nodes, args.verbose_groups))

    unknown = set(given) - {i.name for i in cg.graph.inputs}
    if unknown:
        raise TefuseError(f"--input names unknown input(s) {sorted(unknown)}; "
                          f"inputs are {[i.name for i in cg.graph.inputs]}")
    feeds = random_inputs(cg.graph, args.seed, given)
    outs = cg.run(**feeds)
    times = []
    for _ in range(max(args.repeat, 0)):
        t = time.perf_counter()
        cg.run(**feeds)
        times.append(time.perf_counter() - t)
    if times:
        print(f"run: {1e3 * float(np.median(times)):.2f} ms (median of {len(times)})")
    out_names = [o.name for o in cg.graph.outputs]
    for name, o in zip(out_names, outs):
        print(f"output {name}: {o.dtype}{list(o.shape)} mean {float(np.mean(o)):.6g}")
    if not args.check:
        return 0
    ref = onnxruntime_outputs(model if args.random_weights else str(Path(args.model)), feeds)
    for name, r in zip(out_names, ref):
        if r.size and float(np.ptp(r)) == 0.0:
            print(f"warning: onnxruntime's {name} is constant ({float(r.flat[0]):.6g}), so this check "
                  "proves little (--random-weights gives a model with constant-fill weights real ones)",
                  file=sys.stderr)
    bad = 0
    for c in compare(out_names, outs, ref, args.rtol, args.atol):
        print(f"check {c.name}: max abs err {c.max_abs:.3g}, max rel err {c.max_rel:.3g} "
              f"-> {'OK' if c.ok else 'MISMATCH'} (rtol {args.rtol:g}, atol {args.atol:g})")
        bad += not c.ok
    return 1 if bad else 0
