"""GPU check of the Hopper wgmma template (WgmmaGemm, intrin="wgmma", sm_90a) against
the mma.sync kernels and cuBLAS, in one run: fp16 C = relu(A @ W^T + b) for a few GEMMs, each
variant checked against torch (float64 reference, relative Frobenius error) and then timed.

    python3 tools/wgmma_check.py --json out.json [--shapes 4096x4096x4096 197x2304x768]

Variants per shape: `fallback` (target cuda = sm_90, the untuned config: wgmma),
`mma-fallback` (the untuned mma.sync config, forced), `db` (the shipped/user tuning
records, if they hold the workload), and wgmma configs of the template's space (target
cuda:sm_90a with the H100's 227 KB of shared memory per block).
cuBLAS is torch.addmm + relu, replayed as a CUDA graph.

Robustness: the jobs run in a worker subprocess; a variant that fails to build prints its one-line
error and the next one runs; a CUDA fault (sticky: the context is lost) or a hang (no result for
--job-timeout seconds) ends the worker, the failing job is recorded with that error, and a fresh
worker carries on with the remaining jobs.
"""
from __future__ import annotations

import argparse
import json
import logging
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from tefuse.bench.forced_config import ForcedConfig

log = logging.getLogger(__name__)

SHAPES = ["4096x4096x4096", "197x2304x768", "6272x256x2304"]
# (name, tile (BM, BN, WM, WN: the wgmma path uses BM x BN, warp tiles 16 x BN), stages)
WGMMA_CONFIGS = [
    ("wgmma-128x128-s3", (128, 128, 64, 64), 3),
    ("wgmma-128x128-s4", (128, 128, 64, 64), 4),
    ("wgmma-128x256-s3", (128, 256, 64, 64), 3),
    ("wgmma-256x128-s3", (256, 128, 64, 64), 3),
    ("wgmma-64x128-s4", (64, 128, 32, 64), 4),
    ("wgmma-128x64-s4", (128, 64, 64, 32), 4),
]
TOL = 1e-2  # fp16, float32 accumulation (precision.py's TOLERANCE["fp16"])
CUDA_FAULT = ("illegal", "misaligned", "cudaerror", "cuda_error", "launch failed", "unspecified launch",
              "an illegal", "device-side", "hardware exception", "cuModuleLoad", "CUDA: ")


def _shape(s: str):
    m, n, k = (int(x) for x in s.lower().split("x"))
    return m, n, k


def jobs_for(shapes, configs) -> list[dict]:
    out = []
    for s in shapes:
        out.append({"shape": s, "variant": "cublas"})
        out.append({"shape": s, "variant": "fallback"})
        out.append({"shape": s, "variant": "mma-fallback"})
        out.append({"shape": s, "variant": "db"})
        for name, tile, stages in configs:
            out.append({"shape": s, "variant": name, "tile": list(tile), "stages": stages})
    return out


# ---------------------------------------------------------------- worker side
_DATA: dict = {}


def _data(shape: str):
    """Inputs (fp16-rounded) and the float64 torch reference, once per shape."""
    if shape not in _DATA:
        import torch

        m, n, k = _shape(shape)
        rng = np.random.default_rng(0)
        a = rng.standard_normal((m, k)).astype(np.float16)
        w = (rng.standard_normal((n, k)) / math.sqrt(k)).astype(np.float16)
        b = rng.standard_normal(n).astype(np.float16)
        ta, tw, tb = (torch.from_numpy(v).cuda() for v in (a, w, b))
        with torch.no_grad():
            ref = torch.relu(ta.double() @ tw.double().T + tb.double()).cpu().numpy()
        _DATA[shape] = (a, w, b, ta, tw, tb, ref)
    return _DATA[shape]


def _rel(got, ref) -> float:
    got = got.astype(np.float64)
    if not np.isfinite(got).all():
        return math.inf
    return float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30))


def run_job(job: dict) -> dict:
    import tvm

    from tefuse.driver import build
    from tefuse.graph import GraphBuilder
    from tefuse.bench.timing import time_graph

    m, n, k = _shape(job["shape"])
    flop = 2.0 * m * n * k
    res = dict(job)
    if job["variant"] == "cublas":
        import torch

        a, w, b, ta, tw, tb, ref = _data(job["shape"])
        torch.backends.cuda.matmul.allow_tf32 = False
        got = torch.relu(torch.addmm(tb, ta, tw.T)).float().cpu().numpy()
        res["rel_err"] = _rel(got, ref)
        res["ms"] = time_graph(lambda: torch.relu(torch.addmm(tb, ta, tw.T)))
    else:
        gb = GraphBuilder()
        x, wn, bn = gb.input("a", (m, k), "float16"), gb.input("w", (n, k), "float16"), gb.input("b", (n,), "float16")
        graph = gb.build(gb.relu(gb.bias_add(gb.dense(x, wn), bn, axis=1)))
        if job["variant"] == "fallback":
            target, db = "cuda", None
        elif job["variant"] == "mma-fallback":
            from tefuse.schedules.cuda.gemm.mma import mma_fallback_values
            from tefuse.target import device_caps, make_target

            target = "cuda"
            db = ForcedConfig(mma_fallback_values(m, n, device_caps(make_target(target)).sm_count))
        elif job["variant"] == "db":
            target, db = "cuda", "default"
        else:
            from tefuse.schedules.cuda.gemm.wgmma import HOPPER_SMEM_OPTIN

            target = {"kind": "cuda", "arch": "sm_90a", "max_shared_memory_per_block": HOPPER_SMEM_OPTIN}
            db = ForcedConfig({"tile": tuple(job["tile"]), "bk": 64, "stages": job["stages"], "intrin": "wgmma",
                               "vec_out": 8 if m % job["tile"][0] == 0 and n % job["tile"][1] == 0 else 4})
        t0 = time.perf_counter()
        cg = build(graph, target, db=db)
        res["build_s"] = round(time.perf_counter() - t0, 2)
        res["kernels"] = [{"template": kk.template, "config_index": kk.config_index, "source": kk.config_source}
                          for kk in cg.kernels]
        if job["variant"].startswith("wgmma"):
            src = cg.kernels[0].source("cuda")
            if "wgmma" not in src:
                raise RuntimeError("the built kernel does not call wgmma (config not applied?)")
        a, w, b, ta, tw, tb, ref = _data(job["shape"])
        dev = cg.device
        tv = {"a": tvm.runtime.tensor(a, dev), "w": tvm.runtime.tensor(w, dev), "b": tvm.runtime.tensor(b, dev)}
        got = cg.run(**tv)[0].astype(np.float32)
        res["rel_err"] = _rel(got, ref)
        if res["rel_err"] <= TOL:
            res["ms"] = 1e3 * sum(cg.time_kernels(**tv))
        else:
            res["error"] = f"wrong result: relative error {res['rel_err']:.3g} > {TOL}"
    res["ok"] = res.get("rel_err", math.inf) <= TOL and "ms" in res
    if "ms" in res:
        res["tflops"] = flop / (res["ms"] * 1e-3) / 1e12
    return res


def worker(jobs_path: str, out_path: str, start: int) -> int:
    from tefuse.target import make_target
    from tefuse.schedules import preload

    preload(make_target("cuda"))  # TVM's tensor intrinsics (tens of seconds), once
    jobs = json.loads(Path(jobs_path).read_text())
    with open(out_path, "a") as out:
        for i in range(start, len(jobs)):
            out.write(json.dumps({"start": i}) + "\n")
            out.flush()
            try:
                res = run_job(jobs[i])
            except Exception as e:  # noqa: BLE001 - one variant's failure is a row, not the end
                msg = " ".join(str(e).replace("\x00", "").split())[:400] or type(e).__name__
                res = {**jobs[i], "ok": False, "error": f"{type(e).__name__}: {msg}"}
                log.debug("variant %s failed", jobs[i].get("variant"), exc_info=True)
                fault = any(f.lower() in msg.lower() for f in CUDA_FAULT) and "build" not in msg.lower()
                out.write(json.dumps({"done": i, "row": res}) + "\n")
                out.flush()
                if fault:
                    return 3  # the CUDA context may be gone: a fresh worker goes on
                continue
            out.write(json.dumps({"done": i, "row": res}) + "\n")
            out.flush()
    return 0


# ---------------------------------------------------------------- parent side
def _print_row(r: dict) -> None:
    ms = f"{r['ms']:.3f}" if r.get("ms") is not None else "-"
    tf = f"{r['tflops']:.0f}" if r.get("tflops") else "-"
    err = f"{r['rel_err']:.2e}" if isinstance(r.get("rel_err"), float) else "-"
    tail = "" if r.get("ok") else "  " + str(r.get("error", "FAILED"))[:300]
    print(f"{r['shape']:>16} {r['variant']:>18} {ms:>9} {tf:>6} {err:>9} {'ok' if r.get('ok') else 'FAIL':>4}{tail}",
          flush=True)


def run_all(jobs: list[dict], job_timeout: float) -> list[dict]:
    tmp = Path(tempfile.mkdtemp(prefix="wgmma_check_"))
    jobs_path, out_path = tmp / "jobs.json", tmp / "out.jsonl"
    jobs_path.write_text(json.dumps(jobs))
    rows: dict[int, dict] = {}
    start = 0
    print(f"{'shape':>16} {'variant':>18} {'ms':>9} {'TFLOP/s':>6} {'rel_err':>9} {'':>4}", flush=True)
    while start < len(jobs):
        proc = subprocess.Popen([sys.executable, __file__, "--worker", str(jobs_path),
                                 str(out_path), str(start)])
        seen, current, last = 0, None, time.time()
        while True:
            rc = proc.poll()
            lines = out_path.read_text().splitlines() if out_path.exists() else []
            for ln in lines[seen:]:
                ev = json.loads(ln)
                if "start" in ev:
                    current = ev["start"]
                    last = time.time()
                else:
                    rows[ev["done"]] = ev["row"]
                    _print_row(ev["row"])
                    current = None
            seen = len(lines)
            if rc is not None:
                break
            if current is not None and time.time() - last > job_timeout:
                proc.kill()
                proc.wait()
                rows[current] = {**jobs[current], "ok": False, "error": f"timeout: no result in {job_timeout:.0f} s"}
                _print_row(rows[current])
                break
            time.sleep(0.5)
        if current is not None and current not in rows:  # the worker died inside this job
            rows[current] = {**jobs[current], "ok": False, "error": f"worker died (exit {proc.returncode})"}
            _print_row(rows[current])
        done = [i for i in rows if i >= start]
        nxt = max(done) + 1 if done else start + 1
        if nxt <= start:
            nxt = start + 1
        start = nxt
        if out_path.exists():  # a fresh file for the next worker
            out_path.unlink()
    return [rows.get(i, {**jobs[i], "ok": False, "error": "not run"}) for i in range(len(jobs))]


def summary(rows: list[dict]) -> list[dict]:
    out = []
    for s in dict.fromkeys(r["shape"] for r in rows):
        rs = [r for r in rows if r["shape"] == s and r.get("ok")]
        best = lambda pre: min((r for r in rs if r["variant"].startswith(pre)), key=lambda r: r["ms"], default=None)  # noqa: E731
        w, f, mf, md, cb = best("wgmma"), best("fallback"), best("mma-fallback"), best("db"), best("cublas")
        out.append({"shape": s, "best_wgmma": w and w["variant"], "wgmma_ms": w and w["ms"],
                    "fallback_ms": f and f["ms"], "fallback_vs_cublas": f and cb and f["ms"] / cb["ms"],
                    "mma_fallback_ms": mf and mf["ms"], "db_ms": md and md["ms"], "cublas_ms": cb and cb["ms"],
                    "wgmma_tflops": w and w["tflops"], "cublas_tflops": cb and cb["tflops"]})
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", help="write the rows and a summary here")
    p.add_argument("--shapes", nargs="+", default=SHAPES, help="MxNxK (B is [N, K])")
    p.add_argument("--configs", nargs="*", default=None, help="wgmma config names to try (default: all)")
    p.add_argument("--job-timeout", type=float, default=300.0)
    p.add_argument("--worker", nargs=3, metavar=("JOBS", "OUT", "START"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return worker(args.worker[0], args.worker[1], int(args.worker[2]))
    configs = [c for c in WGMMA_CONFIGS if args.configs is None or c[0] in args.configs]
    rows = run_all(jobs_for(args.shapes, configs), args.job_timeout)
    summ = summary(rows)
    print("\nsummary (ms; best wgmma config):")
    for s in summ:
        print(json.dumps(s))
    if args.json:
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps({"rows": rows, "summary": summ}, indent=1, default=str))
        os.replace(tmp, path)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
