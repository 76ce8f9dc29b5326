"""Experiment (session 27): ResNet-50 b32's max pool (3x3/2, pad 1, fp16 NHWC [32, 112, 112, 64],
the model's second-largest kernel, 56.6 us) with the untuned config (4 channels a thread: 8-byte
loads) and forced ones (8 channels: 16-byte loads, two 4-lane bool groups), timed as CUDA graphs
beside torch's max_pool2d (channels_last), after checking against it.

    python pool_vec.py --json out.json
"""
import argparse
import json
import sys
from types import SimpleNamespace


class Forced:
    def __init__(self, values):
        self.values = values

    def best(self, workload, target):
        return SimpleNamespace(template="cuda_window_pool", config=self.values)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--json", required=True)
    a = p.parse_args()
    import numpy as np
    import torch

    import tefuse
    from tefuse.bench.precision import _tefuse_graph_ms
    from tefuse.bench.timing import time_graph

    b = tefuse.GraphBuilder()
    x = b.input("x", (a.batch, 112, 112, 64), "float16")
    graph = b.build(b.max_pool2d(x, kernel=3, strides=2, padding=1, layout="NHWC"))
    xv = np.random.default_rng(0).standard_normal((a.batch, 112, 112, 64)).astype(np.float16)
    tx = torch.from_numpy(xv).cuda()
    tnchw = tx.permute(0, 3, 1, 2)  # channels_last view
    ref = torch.nn.functional.max_pool2d(tnchw, 3, 2, 1).permute(0, 2, 3, 1).float().cpu().numpy()
    peer = time_graph(lambda: torch.nn.functional.max_pool2d(tnchw, 3, 2, 1))
    rows = []
    for name, db in [("fallback", None)] + [(f"vec{v}_t{t}", Forced({"vec": v, "threads": t, "unroll": 64}))
                                            for v in (8, 4) for t in (256, 128)]:
        cg = tefuse.build(graph, "cuda", db=db)
        got = cg.run(x=xv)[0]
        ok = bool(np.array_equal(got.astype(np.float32), ref))
        ms, err, _ = _tefuse_graph_ms(torch, cg, {"x": tx}, got)
        row = {"config": name, "tefuse_us": 1e3 * ms if ms else None, "peer_us": 1e3 * peer, "ok": ok, "error": err}
        rows.append(row)
        print(json.dumps(row), flush=True)
    json.dump({"argv": sys.argv, "rows": rows}, open(a.json, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
