"""CUDA source hashes of tefuse's kernels, from any checkout (no GPU: nvcc only), to show that a
change leaves the measured kernels as they were:
    python fingerprints.py REPO conv OUT.json   # the 60 cases of `tefuse.bench.precision conv` (NHWC)
    python fingerprints.py REPO gpu OUT.json    # the tensor-core cases of tests/gpu/test_tensorcore_gpu.py
REPO's tefuse and schedules/ are imported (the editable install's mapping is set aside)."""
import sys, json, hashlib
repo, which, out = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, repo)
# the editable install maps tefuse.schedules to /work/main/schedules: drop it, map REPO's instead
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__.lower()
                    and "editable" not in type(f).__name__.lower()]
import importlib.util, tefuse
spec = importlib.util.spec_from_file_location("tefuse.schedules", f"{repo}/schedules/__init__.py",
                                              submodule_search_locations=[f"{repo}/schedules"])
mod = importlib.util.module_from_spec(spec); sys.modules["tefuse.schedules"] = mod; spec.loader.exec_module(mod)
import tefuse.schedules.cuda.tensorcore as _tc
assert _tc.__file__.startswith(repo), _tc.__file__
print("using", tefuse.__file__, _tc.__file__, flush=True)

def conv_cases():
    import numpy as np
    from tefuse.driver import build
    from tefuse.plan.spec import build_plan
    from tefuse.bench.chain import random_args
    from tefuse.bench.precision import _to_np, _graph_precision, DTYPES, RESNET50_CONVS
    res = {}
    for prec in ("fp16", "bf16"):
        for b in (1, 16):
            for (c, hw, k, r, s) in RESNET50_CONVS:
                dt = DTYPES[prec]
                plan = build_plan(f"conv2d(k={k},r={r},stride={s},pad={r // 2})+bias+batch_norm+relu", (b, hw, hw, c), dt, "NHWC")
                vals = random_args(plan, np.random.default_rng(0))
                w = [i.name for i in plan.graph.inputs if i.name.endswith("_weight")][0]
                graph = plan.graph.with_constants({w: _to_np(vals[w].astype(np.float32), dt)})
                key = f"{prec} b{b} {c}x{hw}->{k} {r}x{r}/{s}"
                try:
                    cg = build(graph, "cuda", precision=_graph_precision(prec), cache=None, db="default")
                    res[key] = [hashlib.sha256(cg.source("cuda").encode()).hexdigest()[:16],
                                [(k.template, getattr(k, "config", None) and str(k.config)) for k in cg.kernels]]
                except Exception as e:
                    res[key] = ["ERROR " + str(e).splitlines()[0][:200]]
                print(key, res[key], flush=True)
    return res


def gpu_cases():
    from pathlib import Path
    sys.path.insert(1, str(Path(__file__).resolve().parents[3]))  # the case definitions: this checkout's tests
    from tests.gpu.test_tensorcore_gpu import GPU_CASES
    res = {}
    for case, fn in sorted(GPU_CASES.items()):
        try:
            cg = tefuse.build(fn(), "cuda", prologue=lambda candidate: True)
            res[case] = hashlib.sha256(cg.source("cuda").encode()).hexdigest()[:16]
        except Exception as e:
            res[case] = "ERROR " + str(e).splitlines()[0][:150]
        print(case, res[case], flush=True)
    return res


json.dump({"conv": conv_cases, "gpu": gpu_cases}[which](), open(out, "w"), indent=1)
