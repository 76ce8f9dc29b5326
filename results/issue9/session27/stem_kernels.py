"""Experiment (session 27): each kernel of the b16 fp16 bench stem (3x224x224->64 7x7/2 NHWC, as
conv_case builds it: the 3 -> 4 channel pixel-pair pad, then the conv), timed alone with
cg.time_kernels; likewise ResNet-50's input kernel (NCHW float32 -> paired NHWC fp16) at batch 32.

    python stem_kernels.py --json out.json
"""
import argparse
import importlib.util
import json
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location("st22", Path(__file__).parents[1] / "session22" / "split_tiles.py")
st = importlib.util.module_from_spec(_spec)
sys.modules["st22"] = st
_spec.loader.exec_module(st)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--json", required=True)
    a = p.parse_args()
    import numpy as np
    import tvm

    from tefuse.bench.precision import RESNET50_CONVS, _graph_precision, _to_np
    from tefuse.driver import build

    rows = []
    for batch in (16, 1):
        g = st._graph(RESNET50_CONVS[14], batch, "fp16")
        cg = build(g, "cuda", db=None, precision=_graph_precision("fp16"), split_k=True)
        x = tvm.runtime.tensor(_to_np(np.random.default_rng(0).standard_normal((batch, 224, 224, 3)).astype("float32"),
                                      "float16"), cg.device)
        others = {i.name: tvm.runtime.tensor(_to_np(np.random.default_rng(1).uniform(0.5, 1.5, i.shape).astype("float32"),
                                                    "float16"), cg.device) for i in g.inputs if i.name != "x"}
        times = cg.time_kernels(x=x, **others)
        for k, t in zip(cg.kernels, times):
            row = {"case": "stem", "batch": batch, "kernel": k.group.name, "template": k.template, "us": 1e6 * t}
            rows.append(row)
            print(json.dumps(row), flush=True)
    json.dump({"argv": sys.argv, "rows": rows}, open(a.json, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
