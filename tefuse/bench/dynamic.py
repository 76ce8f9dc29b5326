"""Dynamic-shape bench, on a CUDA GPU: one build over dim ranges against exact-shape builds.

For each model (the zoo's full configuration, exported with its batch, and for token models its
sequence length, as named ONNX dims): one build over the ranges (`build(..., dynamic=...)`) and
one exact build a size; at each size both are checked against onnxruntime, then timed as CUDA
graphs in turns in one process (preprocess.timed_in_turns). Recorded: each latency and the
dynamic/exact ratio, each build's seconds, kernels and size variants (graph/buckets.py), and the
device bytes of the weights. Build seconds move with the shared machine's load (one process's
exact builds of one model ran 8.7-11.2 s): the dynamic build and the exact one at the ranges'
opt are built in rounds, alternating, and compared by their medians.

    python -m tefuse.bench.dynamic --json benchmarks/dynamic.json \\
        [--models resnet50 mobilenet_v2 bert] [--precision fp16] [--buckets N=4,32,64 | --buckets none]
        [--build-rounds 3]
"""
from __future__ import annotations

import argparse
import logging
import math
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from .runs import write_json_whole
from .timing import kernel_profile

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DynamicCase:
    """A model's named dims: their ranges (min:opt:max) and the sizes timed, each a
    {dim: size} binding; `axes` says which input axes carry which dim."""

    model: str
    ranges: dict
    sizes: tuple
    axes: dict  # {input kind: {axis: dim name}}: image inputs and token inputs


CNN_AXES = {"image": {0: "N"}}
TOKEN_AXES = {"tokens": {0: "N", 1: "S"}, "mask": {0: "N", 1: "S"}}
CASES = {
    "resnet50": DynamicCase("resnet50", {"N": "1:32:64"}, ({"N": 1}, {"N": 32}, {"N": 64}), CNN_AXES),
    "mobilenet_v2": DynamicCase("mobilenet_v2", {"N": "1:32:64"}, ({"N": 1}, {"N": 32}, {"N": 64}), CNN_AXES),
    "bert": DynamicCase("bert", {"N": "1:8:8", "S": "16:128:384"},
                        ({"N": 1, "S": 128}, {"N": 8, "S": 128}, {"N": 8, "S": 384}), TOKEN_AXES),
}


def export_dynamic(case: DynamicCase, cache_dir: Optional[Path] = None, small: bool = False) -> Path:
    """The zoo model exported with its dims named (torch.onnx's dynamic_axes), cached beside the
    zoo's static exports; `small`: the zoo's small configuration (the CPU tests')."""
    import torch

    from . import zoo
    from . import zoo_builders as zb

    e = zoo.entry(case.model)
    path = zoo.onnx_path(e, small, cache_dir)
    path = path.with_name(path.stem + "-dynamic.onnx")
    if path.exists():
        return path
    cfg = e.config(small)
    inputs = zoo.random_inputs(cfg)
    dynamic_axes = {s.name: case.axes[s.kind] for s in cfg.inputs if s.kind in case.axes}
    tmp = path.with_name(f".{path.name}.tmp")
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.onnx.export(zoo.build_module(e, small), tuple(torch.from_numpy(v) for v in inputs.values()), str(tmp),
                      dynamo=False, opset_version=zb.OPSET, input_names=list(inputs),
                      output_names=list(cfg.outputs), dynamic_axes=dynamic_axes)
    tmp.replace(path)
    return path


def case_inputs(case: DynamicCase, size: dict, seed: int = 0, small: bool = False) -> dict[str, np.ndarray]:
    """Seeded inputs of the zoo model's kinds (zoo.random_inputs) at this binding of its dims."""
    from . import zoo

    cfg = zoo.entry(case.model).config(small)
    shapes = {}
    for spec in cfg.inputs:
        shape = list(spec.shape)
        for axis, dim in case.axes.get(spec.kind, {}).items():
            shape[axis] = size[dim]
        shapes[spec.name] = shape
    return zoo.random_inputs(cfg, seed, shapes=shapes)


@dataclass
class SizeRow:
    size: dict
    exact_ms: float
    dynamic_ms: float
    exact_err: float
    dynamic_err: float
    ok: bool
    slowest: dict = field(default_factory=dict)  # {"exact"/"dynamic": slowest_kernels}

    @property
    def ratio(self) -> float:
        """The dynamic build's latency over the exact one's: at most 1.10 (CNN) / 1.15 (BERT)."""
        return self.dynamic_ms / self.exact_ms


@dataclass
class ModelRow:
    model: str
    ranges: dict
    precision: str
    dynamic_build_s: float
    dynamic_kernels: int
    dynamic_variants: int  # size variants compiled beside the kernels
    buckets: dict  # {dim: the buckets' upper ends}
    exact_build_s: dict  # {size label: seconds}
    exact_kernels: dict
    dynamic_param_bytes: int
    exact_param_bytes: dict
    sizes: list = field(default_factory=list)
    # {"dynamic" or a size label: BuildTimes as a dict}: where each build's seconds went (graph
    # passes, scheduling, compiling), to tell what a dynamic build's extra time is made of
    build_times: dict = field(default_factory=dict)
    # build seconds in rounds: {"dynamic": s, "exact": s at the ranges' opt}, the first round's the
    # builds above, later rounds alternating which goes first (the shared machine's load moves)
    build_rounds: list = field(default_factory=list)
    build_ratio: float = math.nan  # median dynamic over median exact-at-opt build seconds: at most 1.5
    error: str = ""  # why the model could not be built or checked (the row is then all there is)


SLOWEST = 8


def slowest_kernels(cg, feeds: dict, size: dict, top: int = SLOWEST) -> list:
    """The `top` slowest kernels a run at `size` launches (a dynamic build: each kernel's variant
    for the size's buckets), as `kernel_profile` rows."""
    kernels = cg.kernels_for(size) if cg.dim_ranges else cg.kernels
    return kernel_profile(kernels, cg.time_kernels(**feeds, number=5, repeat=3, min_repeat_ms=0))[:top]


def warm_up(target: str) -> float:
    """Load what a process's first build loads once (the target's tensor intrinsics, parsed
    from TVMScript: 2.5 s on a 2-core machine), before any build is timed: otherwise it was
    charged to whichever build came first, the dynamic one. Returns its seconds."""
    from ..schedules import preload
    from ..target import make_target

    t0 = time.perf_counter()
    preload(make_target(target).kind.name)
    seconds = time.perf_counter() - t0
    log.info("warm-up (tensor intrinsics) %.1fs, not charged to any build", seconds)
    return seconds


def _label(size: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in size.items())


def _rel_err(got: Sequence, want: Sequence) -> float:
    return max(float(np.abs(np.asarray(g, np.float64) - w).max() / max(np.abs(w).max(), 1e-12))
               for g, w in zip(got, want))


def opt_size(case: DynamicCase) -> dict:
    """The binding of each dim to its range's opt: what an exact build is compared with."""
    from ..graph.dims import parse_range

    return {d: parse_range(r).opt for d, r in case.ranges.items()}


def bench_model(torch, case: DynamicCase, precision: str, target: str, cache_dir: Optional[Path],
                buckets=None, rounds: int = 1) -> ModelRow:
    """buckets: build()'s (None: the default buckets; False: one a dim). rounds: of the build
    seconds, the dynamic build against the exact one at opt (the first round is the builds
    the latencies are timed on)."""
    import onnx

    from ..driver import build
    from ..frontend.onnx import import_onnx
    from ..frontend.reference import onnxruntime_outputs
    from .precision import TOLERANCE
    from .preprocess import timed_in_turns

    model = onnx.load(str(export_dynamic(case, cache_dir)))

    def build_dynamic():
        return build(import_onnx(model, dynamic=True), target, precision=precision, dynamic=case.ranges,
                     buckets=buckets)

    def build_exact(shapes: dict):
        return build(import_onnx(model, input_shapes=shapes), target, precision=precision)

    t0 = time.perf_counter()
    dyn = build_dynamic()
    dyn_s = time.perf_counter() - t0
    row = ModelRow(case.model, case.ranges, precision, dyn_s, dyn.num_kernels, dyn.num_variants,
                   dyn.buckets.to_json(), {}, {}, 0, {})
    row.build_times["dynamic"] = asdict(dyn.build_times)
    for size in case.sizes:
        feeds = case_inputs(case, size)
        want = onnxruntime_outputs(model, feeds)
        t0 = time.perf_counter()
        exact = build_exact({k: v.shape for k, v in feeds.items()})
        row.exact_build_s[_label(size)] = time.perf_counter() - t0
        row.build_times[_label(size)] = asdict(exact.build_times)
        row.exact_kernels[_label(size)] = exact.num_kernels
        device_feeds = {k: torch.from_numpy(v).cuda() for k, v in feeds.items()}
        runs, errs = {}, {}
        for key, cg in (("exact", exact), ("dynamic", dyn)):
            outs = [torch.empty(w.shape, dtype=torch.float32, device="cuda") for w in want]
            runs[key] = (lambda c=cg, o=outs: c.run(device_feeds, out=o, stream=torch.cuda.current_stream()))
            runs[key]()
            torch.cuda.synchronize()
            errs[key] = _rel_err([o.cpu().numpy() for o in outs], want)
        # the weights each holds on the device once it has run (uploaded at the first run)
        row.exact_param_bytes[_label(size)] = exact.memory()["params"]
        row.dynamic_param_bytes = dyn.memory()["params"]
        ok = all(e <= TOLERANCE[precision] for e in errs.values())
        ms, _ = timed_in_turns(torch, runs) if ok else ({"exact": float("nan"), "dynamic": float("nan")}, None)
        r = SizeRow(size, ms["exact"], ms["dynamic"], errs["exact"], errs["dynamic"], ok)
        if ok:  # where a dynamic build's time goes at this size, beside the exact build's
            r.slowest = {key: slowest_kernels(cg, feeds, size) for key, cg in (("exact", exact), ("dynamic", dyn))}
        log.info("%s %s: exact %.4f ms | dynamic %.4f ms | %.2fx | err %.2e / %.2e%s", case.model, _label(size),
                 r.exact_ms, r.dynamic_ms, r.ratio, r.exact_err, r.dynamic_err, "" if ok else " MISMATCH")
        row.sizes.append({**asdict(r), "ratio": r.ratio})
        del exact
    log.info("%s: dynamic build %.1f s, %d kernels + %d size variants (buckets %s); exact builds %s", case.model,
             dyn_s, row.dynamic_kernels, row.dynamic_variants, row.buckets,
             ", ".join(f"{k} {v:.1f} s" for k, v in row.exact_build_s.items()))
    cg = runs = outs = device_feeds = dyn = None  # the timed builds' device memory, before more builds
    opt = opt_size(case)
    shapes = {k: v.shape for k, v in case_inputs(case, opt).items()}
    builds = {"dynamic": build_dynamic, "exact": lambda: build_exact(shapes)}
    first = {"dynamic": dyn_s, "exact": row.exact_build_s[_label(opt)]}
    try:
        row.build_rounds = timed_rounds(builds, first, rounds)
    except Exception as e:  # noqa: BLE001 - the latencies above stand; the ratio is of the first round
        log.error("%s: a later build round failed (%s); the first round alone is kept", case.model, e)
        row.build_rounds = [first]
    row.build_ratio = build_ratio(row.build_rounds)
    log.info("%s: build seconds in %d rounds, dynamic %s, exact at %s %s: %.2fx", case.model, len(row.build_rounds),
             [round(r["dynamic"], 1) for r in row.build_rounds], _label(opt),
             [round(r["exact"], 1) for r in row.build_rounds], row.build_ratio)
    return row


def timed_rounds(builds: dict, first: dict, rounds: int) -> list[dict]:
    """`first` ({key: seconds}, the builds already made), then rounds - 1 more of each of
    `builds` ({key: a build}) timed in turns, which goes first alternating from round to round."""
    out = [first]
    for n in range(1, rounds):
        seconds = {}
        for key in (list(builds)[::-1] if n % 2 else list(builds)):
            t0 = time.perf_counter()
            builds[key]()
            seconds[key] = time.perf_counter() - t0
        out.append(seconds)
    return out


def build_ratio(rounds: Sequence[dict]) -> float:
    """The median dynamic build's seconds over the median exact build's."""
    return statistics.median(r["dynamic"] for r in rounds) / statistics.median(r["exact"] for r in rounds)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", default=list(CASES), choices=list(CASES))
    p.add_argument("--precision", default="fp16")
    p.add_argument("--target", default="cuda")
    p.add_argument("--cache-dir", default=None, help="exported ONNX files (default: the zoo's cache)")
    p.add_argument("--json", default=None)
    p.add_argument("--build-rounds", type=int, default=3, metavar="R",
                   help="rounds of the build seconds, dynamic against exact at opt, alternating (default 3)")
    p.add_argument("--buckets", action="append", default=[], metavar="N=4,32,64",
                   help="a dim's size buckets by their upper ends (repeatable; default: opt/8 and max, and opt "
                        "where max > 4 opt); "
                        "'none': one bucket a dim, every kernel compiled once for opt")
    args = p.parse_args(argv)
    if args.build_rounds < 1:
        p.error("--build-rounds must be 1 or more")
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("dynamic bench: needs a CUDA GPU (torch.cuda.is_available() is False)")
    cache = Path(args.cache_dir) if args.cache_dir else None
    from ..graph.buckets import parse_buckets

    buckets = False if args.buckets == ["none"] else (parse_buckets(args.buckets) or None)
    warm_up(args.target)
    rows = []
    for m in args.models:
        mine = buckets if not buckets else {d: e for d, e in buckets.items() if d in CASES[m].ranges}
        try:
            rows.append(bench_model(torch, CASES[m], args.precision, args.target, cache, mine,
                                    args.build_rounds))
        except Exception as e:  # noqa: BLE001 - an import or build error: a row of its own, not the end
            rows.append(failed_row(CASES[m], args.precision, e))
            log.error("%s failed: %s", m, rows[-1].error)
        if args.json:
            write_json_whole(args.json, {"command": " ".join(["python -m tefuse.bench.dynamic", *(argv or sys.argv[1:])]),
                                         "device": torch.cuda.get_device_name(), "rows": [asdict(r) for r in rows]})
    return 0 if not any(r.error for r in rows) else 1


def failed_row(case: DynamicCase, precision: str, e: Exception) -> ModelRow:
    """The row of a model that failed: its error's first two lines (a ModelImportError's first
    names the count, the next one node)."""
    lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()] or [type(e).__name__]
    return ModelRow(case.model, case.ranges, precision, math.nan, 0, 0, {}, {}, {}, 0, {},
                    error=" | ".join(lines[:2])[:400])


if __name__ == "__main__":
    raise SystemExit(main())
