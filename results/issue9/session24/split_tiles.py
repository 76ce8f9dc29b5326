"""Experiment (not part of tefuse): which split-K count and wgmma block tile each small-grid conv
of the ResNet-50 bench wants at batch 16, measured rather than taken from SplitPolicy (which
counts 64x128 tiles only) and the untuned tile rule.

For each conv shape, each legal slice count S and each config: the conv bench's case
(tefuse/bench/precision.conv_case: checked against float64 torch, timed beside cuDNN in the same
process) built with split_k=S (SplitPolicy.force; the runs recorded in COMMANDS.md patched
SplitPolicy.splits to the same rule before that option existed) and the product kernel forced to the config
(the split_sum kernel keeps its untuned config). The builds run first in parallel worker
processes, which fill the kernel cache (TEFUSE_CACHE_DIR); the timing pass then loads them.

    python split_tiles.py --shapes 8 9 11 12 13 --splits 1 2 4 8 --json out.json
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

CONFIGS = {  # name -> (tile, stages)
    "64x64s4": ((64, 64, 32, 32), 4),
    "64x128s4": ((64, 128, 32, 64), 4),
    "128x64s4": ((128, 64, 64, 32), 4),
    "128x128s3": ((128, 128, 64, 64), 3),
    "128x128s4": ((128, 128, 64, 64), 4),
    "64x128s6": ((64, 128, 32, 64), 6),
    "64x128s8": ((64, 128, 32, 64), 8),
    "64x64s6": ((64, 64, 32, 32), 6),
    "64x64s8": ((64, 64, 32, 32), 8),
    "128x128s6": ((128, 128, 64, 64), 6),
    "128x256s3": ((128, 256, 64, 64), 3),
    "256x128s3": ((256, 128, 64, 64), 3),
    # the stem's (one k step of 64 is 2 rows of its 7x4 pair taps)
    "128x64s1": ((128, 64, 64, 32), 1),
    "128x64s2": ((128, 64, 64, 32), 2),
    "128x64s3": ((128, 64, 64, 32), 3),
    "64x64s1": ((64, 64, 32, 32), 1),
    "64x64s3": ((64, 64, 32, 32), 3),
    "256x64s1": ((256, 64, 64, 32), 1),
}


def _db(name: str):
    from tefuse.bench.wgmma_check import ForcedConfig

    tile, stages = CONFIGS[name]
    return ForcedConfig({"tile": tile, "bk": 64, "stages": stages, "intrin": "wgmma", "vec_out": 4})


def _legal(shape, split: int, cfg: str) -> bool:
    c, hw, k, r, s = shape
    depth = r * r * c // split
    return split == 1 or (c % split == 0 and (c // split) % 8 == 0 and depth >= 64 * 2)


def _graph(shape, batch, precision):
    import numpy as np

    from tefuse.bench.chain import random_args
    from tefuse.bench.precision import DTYPES, _to_np
    from tefuse.plan.spec import build_plan

    c, hw, k, r, s = shape
    dt = DTYPES[precision]
    plan = build_plan(f"conv2d(k={k},r={r},stride={s},pad={r // 2})+bias+batch_norm+relu", (batch, hw, hw, c), dt,
                      "NHWC")
    vals = random_args(plan, np.random.default_rng(0))
    w = [i.name for i in plan.graph.inputs if i.name.endswith("_weight")][0]
    return plan.graph.with_constants({w: _to_np(vals[w].astype(np.float32), dt)})


def prebuild(job) -> tuple:
    idx, split, cfg, batch, precision = job
    from tefuse.bench.precision import RESNET50_CONVS, _graph_precision
    from tefuse.driver import build

    t0 = time.time()
    try:
        build(_graph(RESNET50_CONVS[idx], batch, precision), "cuda", db=_db(cfg), precision=_graph_precision(precision),
              split_k=split)
        return job, None, time.time() - t0
    except Exception as e:  # noqa: BLE001 - an experiment: report and go on
        return job, (str(e).strip().splitlines() or [type(e).__name__])[-1][:200], time.time() - t0


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", type=int, nargs="+", default=[8, 9, 11, 12, 13])
    p.add_argument("--splits", type=int, nargs="+", default=[1, 2, 4, 8])
    p.add_argument("--configs", nargs="+", default=list(CONFIGS)[:7])
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--precision", default="fp16")
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--json", required=True)
    a = p.parse_args(argv)
    from tefuse.bench.precision import RESNET50_CONVS

    jobs = [(i, s, c, a.batch, a.precision) for i in a.shapes for s in a.splits for c in a.configs
            if _legal(RESNET50_CONVS[i], s, c)]
    errors = {}
    t0 = time.time()
    with ProcessPoolExecutor(a.workers) as pool:
        for fut in as_completed([pool.submit(prebuild, j) for j in jobs]):
            job, err, secs = fut.result()
            if err:
                errors[job] = err
                print(f"build {job}: {err}", file=sys.stderr, flush=True)
    print(f"{len(jobs)} builds in {time.time() - t0:.0f} s, {len(errors)} failed", file=sys.stderr, flush=True)
    from tefuse.bench.precision import conv_case

    rows = []
    for job in jobs:
        if job in errors:
            rows.append({"shape": job[0], "split": job[1], "config": job[2], "error": errors[job]})
            continue
        idx, split, cfg, batch, precision = job
        c, hw, k, r, s = RESNET50_CONVS[idx]
        try:
            row = conv_case(c, hw, k, r, s, batch, precision, db=_db(cfg), layout="NHWC", split_k=split)
            rec = {"shape": idx, "case": row.case, "split": split, "config": cfg, "tefuse_us": 1e3 * row.tefuse_ms,
                   "peer_us": 1e3 * row.peer_ms, "ratio": row.tefuse_ms / row.peer_ms, "ok": row.ok,
                   "rel_err": row.rel_err, "split_made": row.extra.get("split_k")}
        except Exception as e:  # noqa: BLE001
            rec = {"shape": idx, "split": split, "config": cfg, "error": str(e).splitlines()[-1][:200]}
        rows.append(rec)
        print(json.dumps(rec), flush=True)
    with open(a.json, "w") as f:
        json.dump({"argv": sys.argv, "rows": rows}, f, indent=1)
    best = {}
    for r in rows:
        if r.get("ok"):
            b = best.get(r["shape"])
            if b is None or r["tefuse_us"] < b["tefuse_us"]:
                best[r["shape"]] = r
    for i, r in sorted(best.items()):
        print(f"best {r['case']}: split {r['split']} {r['config']} {r['tefuse_us']:.2f} us, ratio {r['ratio']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
