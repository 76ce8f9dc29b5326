"""Experiment (session 25): the conv bench's batch-16 cases (untuned configs, split-K by policy,
as `python -m tefuse.bench.precision conv --batch 16 --layout NHWC` builds them), built first in
parallel worker processes into the kernel cache (TEFUSE_CACHE_DIR), then each timed beside cuDNN
(tefuse.bench.precision.conv_case). Run once with TEFUSE_WIDE_STAGING=1 and once without, each in
its own cache, for the float32 against the 16-bit staging tile.

    python ab_bench.py --precisions fp16 bf16 --json out.json
"""
import argparse
import importlib.util
import json
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

_spec = importlib.util.spec_from_file_location("split_tiles24", Path(__file__).parents[1] / "session24" / "split_tiles.py")
wrapper = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wrapper)
runner = wrapper.runner
runner._db = lambda name: None  # the default database: the bench's untuned configs


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--precisions", nargs="+", default=["fp16", "bf16"])
    p.add_argument("--shapes", type=int, nargs="+", default=list(range(15)))
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--workers", type=int, default=12)
    p.add_argument("--json", required=True)
    a = p.parse_args()
    from tefuse.bench.precision import RESNET50_CONVS, conv_case

    jobs = [(i, True, "default", a.batch, pr) for pr in a.precisions for i in a.shapes]
    t0 = time.time()
    with ProcessPoolExecutor(a.workers) as pool:
        for fut in as_completed([pool.submit(runner.prebuild, j) for j in jobs]):
            job, err, _ = fut.result()
            if err:
                print(f"build {job}: {err}", file=sys.stderr, flush=True)
    print(f"{len(jobs)} builds in {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    rows = []
    for idx, _, _, batch, pr in jobs:
        c, hw, k, r, s = RESNET50_CONVS[idx]
        try:
            row = conv_case(c, hw, k, r, s, batch, pr, layout="NHWC")
            rec = {"shape": idx, "case": row.case, "precision": pr, "batch": batch, "tefuse_us": 1e3 * row.tefuse_ms,
                   "peer_us": 1e3 * row.peer_ms, "ratio": row.tefuse_ms / row.peer_ms, "ok": row.ok,
                   "rel_err": row.rel_err, "extra": row.extra}
        except Exception as e:  # noqa: BLE001 - an experiment's row
            rec = {"shape": idx, "precision": pr, "error": str(e).splitlines()[-1][:200]}
        rows.append(rec)
        print(json.dumps(rec, default=str), flush=True)
    summary = {}
    for pr in a.precisions:
        rs = [r["ratio"] for r in rows if r.get("precision") == pr and r.get("ok")]
        if rs:
            summary[pr] = {"geomean_ratio": math.exp(sum(map(math.log, rs)) / len(rs)), "n": len(rs),
                           "all_ok": len(rs) == len(a.shapes)}
    print(json.dumps(summary), flush=True)
    with open(a.json, "w") as f:
        json.dump({"argv": sys.argv, "rows": rows, "summary": summary}, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
