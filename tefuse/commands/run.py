"""`tefuse run model.onnx`: import, fuse, build and run a whole ONNX network, and time it.

Prints how the network was fused (kernels vs ONNX nodes, ops per kernel), latency statistics
and throughput in the manner of TensorRT's trtexec, the outputs, and with --check the max abs
/ rel error against onnxruntime. A saved artefact (`tefuse build model.onnx -o model.tefuse`)
runs too, without recompiling.

Timing: the first run (which gives the outputs) and `--warmup N - 1` more are not timed. Then
`--iterations N` runs, or as many as fit in `--duration S` seconds (at least one); by default
10 runs or 3 seconds, whichever ends first. A run is timed from the call to the end of its
last kernel (the device synchronised), with the inputs already on the device and the outputs
left there. `--profile` times every kernel on its own (TVM's time evaluator) and prints a
table, slowest first.

Inputs: `--input NAME=FILE.npy` (repeatable), `--input NAME=FILE.npz` (the array NAME in it,
or its only array), or `--input FILE.npz` (every array whose name is an input); the rest get
seeded random values. `-o FILE.npz` saves the outputs, keyed by output name.

Batch profiles: `--batch 1,8` builds the .onnx model for each batch size (its dynamic leading
dim); an artefact saved with profiles (`tefuse build --batch 1,8 -o m.tefuse`) holds them. Each
profile is run in turn, its lines under a `batch N:` line; `--batch` picks some of an artefact's
profiles, and `--input` files pick the one their shapes match (none matching is an error that
lists the batch sizes). `-o` then keys the outputs `batchN/NAME`.

Dim ranges: `--dynamic N=1:8:32` (repeatable) builds the .onnx model once over its named dims'
ranges; an artefact saved so keeps them. Each `--sizes N=4,S=128` (repeatable) is a run at those
sizes, printed under a `sizes ...` line (default: each range's opt; `--input` files give their
own sizes); `-o` then keys the outputs `N=4,S=128/NAME` when there are several.

`--json FILE` writes everything printed, as one object (schema "tefuse-run/1"):

    {
      "schema": "tefuse-run/1",
      "tefuse": str,                      # tefuse's version
      "model": str, "target": str,        # the path given, the target's text form
      "inputs":  [{"name": str, "dtype": str, "shape": [int], "source": "file" | "random"}],
      "build":   {"kernels": int, "ops": int, "onnx_nodes": int | null,
                  "tuned": int, "predicted": int, "fallback": int,   # configs by source
                  "seconds": float | null},   # import + build; null for a loaded artefact
      "timing":  null | {                 # null with --iterations 0
          "warmup": int, "iterations": int, "seconds": float,   # timed runs and their total
          "min_ms": float, "mean_ms": float, "median_ms": float,
          "p90_ms": float, "p99_ms": float, "max_ms": float,
          "throughput_per_s": float,      # runs a second (iterations / seconds)
          "batch": int | null,            # dim 0 of the first input when it has rank >= 2
          "samples_per_s": float | null}, # batch * throughput_per_s
      "profile": null | [                 # with --profile, slowest first
          {"kernel": str, "ops": [str], "template": str, "config_index": int,
           "config": "tuned" | "predicted" | "fallback", "time_ms": float, "share": float}],  # share in [0, 1]
      "outputs": [{"name": str, "dtype": str, "shape": [int], "mean": float}],
      "check":   null | [{"name": str, "max_abs": float | null, "max_rel": float | null,
                          "ok": bool}],   # null errors: the shapes differ
      "bisect":  null | {"tensor": str, "node": str, "op_type": str,   # --bisect after a failed check:
                         "error": float | null, "reason": str, "builds": int},  # the first bad tensor
      "ok": bool                          # false when a check failed (exit code 1)
    }

A graph built over dim ranges adds "sizes": {name: int} (the sizes the run bound); with several
--sizes the object is {"schema", "tefuse", "model", "target", "runs": [one object as above, less
schema/tefuse/model/target, per size], "ok"}.

With batch profiles the object is {"schema", "tefuse", "model", "target", "profiles": [one
object as above, less schema/tefuse/model/target, plus "batch": int, per profile run], "ok"}.
"""
from __future__ import annotations

import argparse
import json
import logging
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Optional

from ..errors import TefuseError
from . import UsageError
from .build import (add_batch_option, add_db_options, add_dynamic_option, add_precision_option, add_shape_option,
                    build_options, dynamic_build_args, graph_options, open_db_and_cache, parse_batches,
                    parse_dynamic_option, parse_shapes)

log = logging.getLogger(__name__)

SCHEMA = "tefuse-run/1"
DEFAULT_ITERATIONS, DEFAULT_DURATION = 10, 3.0


@dataclass(frozen=True)
class Comparison:
    """Error of tefuse's output against a reference, per graph output."""

    name: str
    max_abs: float
    max_rel: float
    ok: bool


@dataclass(frozen=True)
class Timing:
    """Wall-clock times of the timed runs, in seconds, and what they were."""

    times: list[float]
    warmup: int
    batch: Optional[int] = None

    def stats(self) -> dict[str, Any]:
        import numpy as np

        t = np.asarray(self.times, np.float64) * 1e3
        total = float(np.sum(self.times))
        thr = len(self.times) / total if total > 0 else 0.0  # (a clock too coarse to see the runs)
        return {"warmup": self.warmup, "iterations": len(self.times), "seconds": total,
                "min_ms": float(t.min()), "mean_ms": float(t.mean()), "median_ms": float(np.median(t)),
                "p90_ms": float(np.percentile(t, 90)), "p99_ms": float(np.percentile(t, 99)),
                "max_ms": float(t.max()), "throughput_per_s": thr, "batch": self.batch,
                "samples_per_s": thr * self.batch if self.batch else None}

    def lines(self) -> list[str]:
        s = self.stats()
        lat = (f"latency: min {s['min_ms']:.3f} ms, mean {s['mean_ms']:.3f}, median {s['median_ms']:.3f}, "
               f"p90 {s['p90_ms']:.3f}, p99 {s['p99_ms']:.3f}, max {s['max_ms']:.3f} "
               f"({s['iterations']} run{'s' if s['iterations'] != 1 else ''} in {_seconds(s['seconds'])} "
               f"after {s['warmup']} warm-up)")
        thr = f"throughput: {s['throughput_per_s']:.2f} runs/s"
        if s["samples_per_s"] is not None:
            thr += f" ({s['samples_per_s']:.2f} samples/s at batch {s['batch']})"
        return [lat, thr]


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="build an ONNX model (or load an artefact), run and time it, check it",
                       description="Import an ONNX model, build it, run it and time it (trtexec-style); "
                                   "with --check compare with onnxruntime.")
    p.add_argument("model", help="model.onnx, or an artefact saved by `tefuse build -o`")
    p.add_argument("--target", "-t", default="llvm",
                   help="llvm, cuda (the GPU present's architecture), cuda:sm_80 (default llvm)")
    p.add_argument("--input", "-i", action="append", default=[], metavar="NAME=FILE.npy|FILE.npz",
                   help="input values: NAME=FILE.npy, NAME=FILE.npz, or one FILE.npz holding every input "
                        "(repeatable); seeded random values otherwise")
    add_shape_option(p)
    add_batch_option(p)
    add_dynamic_option(p)
    p.add_argument("--sizes", action="append", default=[], metavar="N=4,S=128",
                   help="a graph built over dim ranges (--dynamic, or such an artefact): run at these sizes "
                        "(repeatable: one run each; default: each range's opt); random inputs take them")
    p.add_argument("--check", action="store_true", help="compare with onnxruntime (CPU)")
    p.add_argument("--rtol", type=float, default=1e-3, help="--check tolerance (default 1e-3)")
    p.add_argument("--atol", type=float, default=1e-4, help="--check tolerance (default 1e-4)")
    p.add_argument("--bisect", action="store_true",
                   help="when --check fails, find the first ONNX tensor that departs from onnxruntime by more "
                        "than --rtol of its scale (builds cut models: tefuse.bench.bisect)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (and --random-weights)")
    p.add_argument("--random-weights", action="store_true",
                   help="replace weights stored as constant fills (the ONNX zoo's light models) with "
                        "seeded random values, so that --check compares something")
    t = p.add_argument_group("timing")
    t.add_argument("--warmup", type=int, default=1, metavar="N",
                   help="untimed runs first, the one giving the outputs included (default 1)")
    n = t.add_mutually_exclusive_group()
    n.add_argument("--iterations", "--repeat", type=int, default=None, metavar="N", dest="iterations",
                   help=f"timed runs (0: none; default: {DEFAULT_ITERATIONS} or {DEFAULT_DURATION:g} s, "
                        "whichever ends first)")
    n.add_argument("--duration", type=float, default=None, metavar="S",
                   help="time runs for S seconds (at least one run)")
    t.add_argument("--profile", action="store_true",
                   help="time each kernel: a table of kernel, fused ops, template, config source (tuned, "
                        "predicted or fallback), time, share")
    t.add_argument("--top", type=int, default=0, metavar="N",
                   help="--profile table: the N slowest kernels and one line for the rest (default: all; "
                        "the JSON report has all)")
    o = p.add_argument_group("files")
    o.add_argument("-o", "--output", metavar="FILE.npz", help="save the outputs, keyed by output name")
    o.add_argument("--json", metavar="FILE", help="write the fusion, timing, profile, outputs and check as JSON "
                                                  "(schema in `pydoc tefuse.commands.run`)")
    p.add_argument("--verbose-groups", action="store_true",
                   help="list every fused group with its schedule (template, config, and whether a tuning "
                        "record, the transfer model or the fallback chose it)")
    add_db_options(p)
    add_precision_option(p)
    p.set_defaults(func=run)


# -- inputs ---------------------------------------------------------------------------------
def load_inputs(items: list[str], names: Optional[list[str]] = None,
                sources: Optional[dict[str, str]] = None) -> dict[str, Any]:
    """--input values: NAME=FILE.npy, NAME=FILE.npz (array NAME in it, or its only array), or a
    bare FILE.npz giving every array it holds (only those named as an input when `names` is given).
    `sources`, when given, is filled with the file (FILE, or FILE.npz:ARRAY) of each input."""
    import numpy as np

    given: dict[str, Any] = {}

    def put(name: str, value, where: str) -> None:
        if name in given:
            raise UsageError(f"--input: input {name!r} given twice ({where})")
        given[name] = value
        if sources is not None:
            sources[name] = where

    for it in items:
        name, sep, path = it.partition("=")
        if not sep:
            name, path = "", it
        elif not name:
            raise UsageError(f"--input {it!r}: expected NAME=FILE or FILE.npz")
        data = _read_array(name, it, path)
        if isinstance(data, np.lib.npyio.NpzFile):
            with data:
                keys = list(data.files)
                if not name:
                    for k in keys:
                        if names is None or k in names:
                            put(k, data[k], path)
                    if names is not None and not set(keys) & set(names):
                        raise UsageError(f"--input {path}: none of its arrays {keys} is an input; "
                                         f"inputs are {names}")
                elif name in keys:
                    put(name, data[name], path)
                elif len(keys) == 1:
                    put(name, data[keys[0]], f"{path}:{keys[0]}")
                else:
                    raise UsageError(f"--input {it!r}: {path} holds {keys}, none named {name!r}; "
                                     f"use --input {path} for all of them")
        elif not name:
            raise UsageError(f"--input {it!r}: a .npy file needs a name (NAME={path})")
        else:
            put(name, data, path)
    return given


def _read_array(name: str, item: str, path: str):
    """np.load of one --input file, or a one-line usage error naming the input and the file."""
    import numpy as np

    what = f"--input {name}" if name else f"--input {item!r}"
    p = Path(path)
    if not p.exists():
        raise UsageError(f"{what}: no such file {path!r}")
    if p.is_dir():
        raise UsageError(f"{what}: {path!r} is a directory, cannot read it as an array")
    try:
        return np.load(p, allow_pickle=False)
    except Exception as e:  # noqa: BLE001 - numpy raises ValueError, EOFError, OSError, UnpicklingError...
        why = (str(e).strip().splitlines() or [type(e).__name__])[0]
        if "pickled" in why:  # what numpy says of any file without the .npy/.npz magic
            why = "no .npy/.npz header"
        raise UsageError(f"{what}: cannot read {path!r}: not a .npy or .npz file ({why})") from None


def compare(names: list[str], got: list, want: list, rtol: float, atol: float) -> list[Comparison]:
    import numpy as np

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


# -- reports --------------------------------------------------------------------------------
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


def profile_rows(cg, kernel_seconds: list[float]) -> list[dict[str, Any]]:
    """One row per kernel (the --profile table and JSON), slowest first."""
    total = sum(kernel_seconds) or 1.0
    rows = [{"kernel": k.group.name, "ops": [n.op for n in k.group.nodes], "template": k.template,
             "config_index": k.config_index, "config": k.config_source, "time_ms": t * 1e3,
             "share": t / total} for k, t in zip(cg.kernels, kernel_seconds)]
    return sorted(rows, key=lambda r: -r["time_ms"])


def profile_table(rows: list[dict[str, Any]], top: int = 0) -> str:
    """The --profile table: rows as profile_rows gives them (slowest first); with `top`, the
    first `top` and one line for the rest."""
    head = ("kernel", "fused ops", "template", "config", "time (ms)", "share")
    shown = rows[:top] if 0 < top < len(rows) else rows
    body = [(r["kernel"], "+".join(r["ops"]), r["template"], f"{r['config']} #{r['config_index']}",
             f"{r['time_ms']:.4f}", f"{100 * r['share']:.1f}%") for r in shown]
    rest = rows[len(shown):]
    if rest:
        body.append((f"({len(rest)} more)", "", "", "", f"{sum(r['time_ms'] for r in rest):.4f}",
                     f"{100 * sum(r['share'] for r in rest):.1f}%"))
    body.append(("total", f"{len(rows)} kernels", "", "", f"{sum(r['time_ms'] for r in rows):.4f}", "100.0%"))
    widths = [max(len(x[i]) for x in [head, *body]) for i in range(len(head))]
    right = {4, 5}

    def fmt(row):
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))).rstrip()

    return "\n".join([fmt(head), *map(fmt, body)])


def _seconds(s: float) -> str:
    return f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.2f} s"


def _finite(x: float) -> Optional[float]:
    return x if math.isfinite(x) else None


# -- the command ----------------------------------------------------------------------------
def _load(args: argparse.Namespace, given: dict[str, Any], sources: Optional[dict[str, str]] = None):
    """(compiled graph, onnx nodes or None, the ModelProto or None, build seconds or None)."""
    from ..runtime import artifact
    from .build import build_graph, check_runnable, import_model, resolve_target

    shapes = parse_shapes(args.shape)
    if not args.model.endswith(".onnx"):
        if args.check or args.random_weights:
            raise UsageError("--check and --random-weights need the .onnx model, not an artefact")
        if shapes:
            raise UsageError("--shape applies to an .onnx model; an artefact's shapes are fixed")
        if args.dynamic or args.buckets:
            raise UsageError("--dynamic and --buckets apply to an .onnx model; an artefact keeps the ranges and "
                             "buckets it was built with")
        if not Path(args.model).exists():
            raise TefuseError(f"no such model or artefact file: {args.model}")
        cg = artifact.load(args.model)  # logs what it loaded
        check_runnable(cg.target, "run")
        return cg, None, None, None
    from ..frontend.onnx import load_model

    target = resolve_target(args.target)
    check_runnable(target, "run")
    t0 = time.perf_counter()
    model = load_model(args.model)
    if args.random_weights:
        from ..frontend.randomize import randomize_constant_weights

        model, replaced = randomize_constant_weights(model, args.seed)
        log.info("random weights: %d constant-fill weights replaced (seed %d)", replaced, args.seed)
    init = {i.name for i in model.graph.initializer}
    input_names = [i.name for i in model.graph.input if i.name not in init]
    _check_input_names(given, input_names)  # before the build, which takes a while
    _check_input_shapes(given, sources or {}, model, shapes if args.batch is None else {})
    dynamic = parse_dynamic_option(args)
    extra = dynamic_build_args(args, dynamic)
    batches = parse_batches(args.batch)
    if batches is not None:  # the inputs given pick a profile; they do not shape the model
        from .build import onnx_batch_graphs

        graph = onnx_batch_graphs(model, batches, shapes, source=args.model)
    else:
        for k, v in given.items():
            if k in input_names and k not in shapes and not dynamic:  # a dynamic build takes the files' sizes at run time
                shapes[k] = tuple(v.shape)
        graph = import_model(model, shapes, input_names, args.model, dynamic=dynamic is not None)
    db, cache = open_db_and_cache(args)
    cg = build_graph(graph, target, db, cache, args.jobs, options=build_options(args), **extra,
                     **graph_options(args, graph))
    return cg, len(model.graph.node), model, time.perf_counter() - t0


def _check_input_names(given: dict[str, Any], input_names: list[str]) -> None:
    unknown = set(given) - set(input_names)
    if unknown:
        raise UsageError(f"--input names unknown input(s) {sorted(unknown)}; inputs are {input_names}")


def _check_input_shapes(given: dict[str, Any], sources: dict[str, str], model, shapes: dict) -> None:
    """An input file must fit its model input: the model's rank and fixed dims (a symbolic dim,
    such as a batch named N, takes the file's size), and the --shape given for it."""
    from .build import model_shape_text, named_shapes, shape_conflict

    init = {i.name for i in model.graph.initializer}
    inputs = {vi.name: vi for vi in model.graph.input if vi.name not in init}
    shapes = named_shapes(shapes, list(inputs)) if shapes else {}
    for name, value in given.items():
        vi = inputs.get(name)
        shape = tuple(getattr(value, "shape", ()))
        if vi is None:
            continue
        where = f"--input {name} ({sources[name]})" if name in sources else f"--input {name}"
        have = "x".join(map(str, shape)) or "a scalar"
        why = shape_conflict(vi, shape)
        if why:
            raise TefuseError(f"{where}: the array's shape is {have}, but input {name!r} is "
                              f"{model_shape_text(vi) or 'a scalar'} in the model ({why})")
        if name in shapes and tuple(shapes[name]) != shape:
            raise TefuseError(f"{where}: the array's shape is {have}, but --shape gives "
                              f"{'x'.join(map(str, shapes[name]))}")


def _check_files_complete(items: list[str], given: dict[str, Any], input_names: list[str]) -> None:
    """A bare `--input FILE.npz` stands for every input: one it lacks is an error, not a random value."""
    files = [it for it in items if "=" not in it]
    missing = [n for n in input_names if n not in given]
    if files and missing:
        from ..errors import TefuseError

        raise TefuseError(f"--input {', '.join(files)}: no array for input{'s' if len(missing) > 1 else ''} "
                          f"{', '.join(map(repr, missing))} (give it with --input NAME=FILE.npy)")


def _bisect(args: argparse.Namespace, target, model, feeds: dict[str, Any]):
    """The first tensor where this build departs from onnxruntime (bench.bisect), the cut models
    built as the model was: same shapes, precision, options and tuning records."""
    from ..bench.bisect import first_divergence
    from .build import build_graph, import_model

    db, cache = open_db_and_cache(args)
    shapes = {k: tuple(v.shape) for k, v in feeds.items()}
    options = graph_options(args)

    def runner(sub, inputs):
        init = {i.name for i in sub.graph.initializer}
        names = [i.name for i in sub.graph.input if i.name not in init]
        graph = import_model(sub, {k: v for k, v in shapes.items() if k in names}, names, f"{args.model} (cut)")
        return build_graph(graph, target, db, cache, args.jobs, options=build_options(args), **options).run(
            as_numpy=True, **{k: v for k, v in inputs.items() if k in names})

    return first_divergence(model, feeds, runner, options["precision"], args.rtol)


def _time_runs(cg, feeds: dict[str, Any], warmup: int, iterations: Optional[int],
               duration: Optional[float]) -> Optional[Timing]:
    """Warm-up runs (the first already made by the caller), then the timed ones."""
    from ..runtime import to_device

    dev = cg.device
    on_dev = {k: to_device(v, dev) for k, v in feeds.items()}  # uploads are not what is timed
    for _ in range(max(warmup - 1, 0)):
        cg.run(as_numpy=False, **on_dev)
    if iterations is not None and iterations <= 0:
        return None
    if iterations is None and duration is None:
        iterations, duration = DEFAULT_ITERATIONS, DEFAULT_DURATION
    times: list[float] = []
    start = time.perf_counter()
    while True:
        t = time.perf_counter()
        cg.run(as_numpy=False, **on_dev)
        dev.sync()
        times.append(time.perf_counter() - t)
        if iterations is not None and len(times) >= iterations:
            break
        if duration is not None and time.perf_counter() - start >= duration:
            break
    first = tuple(on_dev[cg.graph.inputs[0].name].shape) if cg.graph.inputs else None  # as this run has it
    batch = int(first[0]) if first is not None and len(first) >= 2 else None
    return Timing(times, max(warmup, 1), batch)


def _chosen(loaded, args: argparse.Namespace, given: dict[str, Any]) -> list[tuple[Optional[int], Any]]:
    """(batch or None, compiled graph) to run: a plain graph; the profile the --input files
    match; the --batch profiles of an artefact; else every profile."""
    from ..runtime.profiles import ProfiledGraph

    if not isinstance(loaded, ProfiledGraph):
        if args.batch is not None:
            raise UsageError("--batch: this artefact has no batch profiles (build it with --batch)")
        return [(None, loaded)]
    if given:
        picked = loaded.select(**given)
        return [(next(p.batch for p in loaded.profiles if p.graph is picked), picked)]
    batches = parse_batches(args.batch) or loaded.batch_sizes
    return [(b, loaded.profile(b)) for b in batches]


def run(args: argparse.Namespace) -> int:
    if args.warmup < 0:
        raise UsageError("--warmup must be 0 or more")
    if args.top < 0:
        raise UsageError("--top must be 0 (all) or more")
    if args.duration is not None and args.duration <= 0:
        raise UsageError("--duration must be more than 0 seconds")
    if args.iterations is not None and args.iterations < 0:
        raise UsageError(f"--iterations must be 0 (no timing) or more, got {args.iterations}")
    from .paths import check_output_path, write_failed

    for path, option in ((args.output, "-o"), (args.json, "--json")):
        if path:
            check_output_path(path, option)
    sources: dict[str, str] = {}
    given = load_inputs(args.input, sources=sources)
    loaded, onnx_nodes, model, build_seconds = _load(args, given, sources)
    chosen = _chosen(loaded, args, given)
    runs = _sized_runs(loaded, args, given) if chosen[0][0] is None else [None]
    reports, saved = [], {}
    for batch, cg in chosen:
        if batch is not None:
            print(f"batch {batch}:")
        for sizes in runs:
            report, outs = _run_graph(cg, args, given, onnx_nodes, model, build_seconds, sizes)
            reports.append(report if batch is None else {"batch": batch, **report})
            key = f"batch{batch}/" if batch is not None else _sizes_text(sizes) + "/" if len(runs) > 1 else ""
            saved.update({key + n: o for n, o in outs.items()})
    if args.output:
        import numpy as np

        try:
            np.savez(args.output, **saved)
        except OSError as e:
            raise write_failed(args.output, "-o", e) from None
        log.info("saved %d output(s) to %s", len(saved), args.output)
    ok = all(r["ok"] for r in reports)
    if args.json:
        from ..version import __version__

        head = {"schema": SCHEMA, "tefuse": __version__, "model": args.model, "target": str(loaded.target)}
        if chosen[0][0] is not None:
            report = {**head, "profiles": reports, "ok": ok}
        elif len(reports) > 1:
            report = {**head, "runs": reports, "ok": ok}
        else:
            report = {**head, **reports[0]}
        try:
            Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
        except OSError as e:
            raise write_failed(args.json, "--json", e) from None
        log.info("wrote %s", args.json)
    return 0 if ok else 1


def _sized_runs(cg, args: argparse.Namespace, given: dict[str, Any]) -> list[Optional[dict[str, int]]]:
    """The dim sizes to run a graph built over ranges at: each --sizes, else the --input files'
    sizes, else each range's opt; [None] for a graph of fixed shapes."""
    ranges = getattr(cg, "dim_ranges", {})
    if not ranges:
        if args.sizes:
            raise UsageError("--sizes: this graph has fixed shapes (build it with --dynamic N=min:opt:max)")
        return [None]
    if args.sizes and given:
        raise UsageError("--sizes and --input: the input files fix the sizes; give one or the other")
    if given:
        return [{**{k: r.opt for k, r in ranges.items()}, **cg.dim_sizes(given, partial=True)}]
    if not args.sizes:
        return [{k: r.opt for k, r in ranges.items()}]
    runs = []
    for text in args.sizes:
        sizes = {}
        for part in text.split(","):
            name, sep, value = part.partition("=")
            if not sep or not value.strip().isdigit():
                raise UsageError(f"--sizes {text!r}: expected NAME=SIZE[,NAME=SIZE...], e.g. N=4")
            sizes[name.strip()] = int(value)
        unknown = sorted(set(sizes) - set(ranges))
        if unknown:
            raise UsageError(f"--sizes names {unknown[0]!r}; the graph's dims are {', '.join(ranges)}")
        runs.append({**{k: r.opt for k, r in ranges.items()}, **sizes})
    return runs


def _sizes_text(sizes: Optional[dict[str, int]]) -> str:
    return ",".join(f"{k}={v}" for k, v in (sizes or {}).items())


def _run_graph(cg, args: argparse.Namespace, given: dict[str, Any], onnx_nodes: Optional[int], model,
               build_seconds: Optional[float], sizes: Optional[dict[str, int]] = None
               ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run, time, profile and check one compiled graph (a graph built over dim ranges at
    `sizes`), printing as it goes; (its part of the JSON report, {output name: array})."""
    import numpy as np

    _check_input_names(given, [i.name for i in cg.graph.inputs])
    _check_files_complete(args.input, given, [i.name for i in cg.graph.inputs])
    print(fusion_summary(cg, onnx_nodes, args.verbose_groups))

    from ..runtime.feeds import random_inputs

    feeds = random_inputs(cg.graph, args.seed, given, sizes)
    if sizes is not None:
        sizes = cg.dim_sizes(feeds)  # checked against the ranges: one line if out of range
        print(f"sizes {_sizes_text(sizes)} (ranges {', '.join(f'{k}={r}' for k, r in cg.dim_ranges.items())})")
    outs = cg.run(**feeds)
    timing = _time_runs(cg, feeds, args.warmup, args.iterations, args.duration)
    if timing is not None:
        print("\n".join(timing.lines()))
    rows = None
    if args.profile:
        rows = profile_rows(cg, cg.time_kernels(number=1, repeat=3, min_repeat_ms=20, **feeds))
        print(profile_table(rows, args.top))
    out_names = [o.name for o in cg.graph.outputs]
    for name, o in zip(out_names, outs):
        print(f"output {name}: {o.dtype}{list(o.shape)} mean {float(np.mean(o)):.6g}")

    checks = None
    if args.check:
        from ..frontend.reference import onnxruntime_outputs

        ref = onnxruntime_outputs(model, feeds)
        for name, r in zip(out_names, ref):
            if r.size and float(np.ptp(r)) == 0.0:
                log.warning("onnxruntime's %s is constant (%.6g), so this check proves little "
                            "(--random-weights gives a model with constant-fill weights real ones)",
                            name, float(r.flat[0]))
        checks = compare(out_names, outs, ref, args.rtol, args.atol)
        for c in checks:
            print(f"check {c.name}: max abs err {c.max_abs:.3g}, max rel err {c.max_rel:.3g} "
                  f"-> {'OK' if c.ok else 'MISMATCH'} (rtol {args.rtol:g}, atol {args.atol:g})")
    ok = checks is None or all(c.ok for c in checks)
    divergence = None
    if args.bisect and not ok and model is not None:
        divergence = _bisect(args, cg.target, model, feeds)
        print(divergence.line() if divergence else "bisect: every tensor of the cut models matches onnxruntime "
              f"within {args.rtol:g} of its scale")
    tuned = sum(k.config_source == "tuned" for k in cg.kernels)
    predicted = sum(k.config_source == "predicted" for k in cg.kernels)
    report = {
        "inputs": [{"name": i.name, "dtype": i.dtype, "shape": list(np.shape(feeds[i.name])),
                    "source": "file" if i.name in given else "random"} for i in cg.graph.inputs],
        **({"sizes": sizes} if sizes is not None else {}),
        "build": {"kernels": cg.num_kernels, "ops": sum(len(k.group.nodes) for k in cg.kernels),
                  "onnx_nodes": onnx_nodes, "tuned": tuned, "predicted": predicted,
                  "fallback": cg.num_kernels - tuned - predicted,
                  "seconds": build_seconds},
        "timing": timing.stats() if timing is not None else None,
        "profile": rows,
        "outputs": [{"name": n, "dtype": str(o.dtype), "shape": list(o.shape), "mean": float(np.mean(o))}
                    for n, o in zip(out_names, outs)],
        "check": None if checks is None else [{"name": c.name, "max_abs": _finite(c.max_abs),
                                               "max_rel": _finite(c.max_rel), "ok": c.ok} for c in checks],
        "bisect": None if divergence is None else {**asdict(divergence), "error": _finite(divergence.error)},
        "ok": ok,
    }
    return report, dict(zip(out_names, outs))
