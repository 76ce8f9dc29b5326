"""Experiment (session 25): where the TMA mainloop's 2x1-cluster kernels went wrong on the H100
(tma_2x1_smax.json: 128x128 tiles, reductions of 1 and 2 k steps, rel_err inf). Builds a 1x1
conv (16x28x28xC -> 256, +bias+relu, fp16) for each (C, tile, cluster, TEFUSE_TMA_STAGES), runs
it against llvm and prints the error and which rows / columns of the output are wrong.

    python tma_diag.py [--quick]
"""
import json
import os
import sys

import numpy as np

import tefuse
from tefuse.bench.wgmma_check import ForcedConfig
from tefuse.plan.spec import parse_chain

TILES = {"128x128": [128, 128, 64, 64], "64x128": [64, 128, 32, 64]}
CASES = [  # C, tile, cluster, TEFUSE_TMA_STAGES
    (64, "128x128", "1x1", ""), (64, "128x128", "2x1", ""), (64, "128x128", "1x2", ""),
    (64, "64x128", "2x1", ""),
    (192, "128x128", "2x1", ""), (192, "128x128", "2x1", "2"),
    (512, "128x128", "2x1", "2"), (512, "128x128", "2x1", "4"),
]


def graph(c):
    g = parse_chain("conv2d(k=256,r=1)+bias+relu", (16, 28, 28, c), "float16", "NHWC")
    w = [i for i in g.inputs if i.name.endswith("_weight")][0]
    return g.with_constants({w.name: (np.random.default_rng(1).standard_normal(w.shape) * 0.05).astype("float16")})


def main():
    rng = np.random.default_rng(0)
    refs = {}
    out = []
    for c, tile, cluster, stages in CASES:
        g = graph(c)
        vals = {i.name: (rng.standard_normal(i.shape) * 0.5).astype(i.dtype) for i in g.inputs}
        if c not in refs:
            refs[c] = (vals, tefuse.build(g, "llvm").run(**vals)[0].astype(np.float32))
        vals, want = refs[c]
        os.environ["TEFUSE_TMA"] = cluster
        os.environ["TEFUSE_TMA_STAGES"] = stages
        row = {"C": c, "tile": tile, "cluster": cluster, "stages_env": stages}
        try:
            cfg = {"tile": TILES[tile], "stages": 3, "bk": 64, "intrin": "wgmma", "vec_out": 4}
            cg = tefuse.build(g, "cuda", cache=None, db=ForcedConfig(cfg))
            got = cg.run(**vals)[0].astype(np.float32)
            bad = ~np.isclose(got, want, atol=1e-2 * np.abs(want).max(), rtol=0) | ~np.isfinite(got)
            m = bad.reshape(-1, bad.shape[-1])
            rows, cols = np.nonzero(m.any(1))[0], np.nonzero(m.any(0))[0]
            bm = TILES[tile][0]
            row.update(bad_frac=float(bad.mean()), nonfinite=int((~np.isfinite(got)).sum()),
                       bad_rows=len(rows), bad_cols=len(cols),
                       bad_mtiles=sorted({int(r) // bm for r in rows})[:12],
                       bad_rows_in_tile=sorted({int(r) % bm for r in rows})[:12],
                       bad_cols_head=[int(x) for x in cols[:12]])
        except Exception as e:  # noqa: BLE001 - an experiment's row
            row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
        print(json.dumps(row), flush=True)
        out.append(row)
    if len(sys.argv) > 1 and sys.argv[1].endswith(".json"):
        json.dump(out, open(sys.argv[1], "w"), indent=1)


if __name__ == "__main__":
    main()
