"""Probe (not part of tefuse; session 23): how TVM 0.27 launches a kernel with a loop bound to
`clusterCtaIdx.x`. On the CPU it compiles (nvcc, sm_90a) and the rank is read as
`%cluster_ctarank`, but the index still uses the raw `blockIdx.x` (`blockIdx.x * 2 * 64 + rank *
64 + threadIdx.x` for clusters of two 64-thread CTAs). Whether that is right depends on the grid
the runtime launches: one blockIdx a cluster, or one a CTA. On a GPU, `--run` fills out[i] with
the CTA index the kernel computed for element i, counts the writes, and prints both: every
element written once means one blockIdx a cluster, as the codegen assumes; an illegal-address
error or elements never written means the runtime launched one blockIdx a CTA, and the binding
needs the cluster index (`%clusterid`) instead of blockIdx.

    TVM_CUDA_COMPILE_MODE=nvcc python probe_cluster.py          # CPU: compile, print the kernel
    TVM_CUDA_COMPILE_MODE=nvcc python probe_cluster.py --run    # GPU: launch and check
"""
import sys

import numpy as np
import tvm
from tvm.script import tirx as T

CLUSTERS, RANKS, THREADS = 8, 2, 64


@T.prim_func(s_tir=True)
def f(out: T.Buffer((CLUSTERS * RANKS * THREADS,), "int32"), hits: T.Buffer((CLUSTERS * RANKS * THREADS,), "int32")):
    for bx in T.thread_binding(CLUSTERS, thread="blockIdx.x"):
        for cx in T.thread_binding(RANKS, thread="clusterCtaIdx.x"):
            for tx in T.thread_binding(THREADS, thread="threadIdx.x"):
                with T.sblock("b"):
                    v = T.axis.spatial(CLUSTERS * RANKS * THREADS, (bx * RANKS + cx) * THREADS + tx)
                    out[v] = v // THREADS
                    hits[v] = hits[v] + 1


if __name__ == "__main__":
    target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
    with target:
        mod = tvm.compile(tvm.IRModule({"main": f}), target=target)
    src = mod.mod.imports[0].inspect_source()
    assert "%cluster_ctarank" in src
    print(src[src.find('extern "C" __global__'):][:700])
    if "--run" in sys.argv:
        dev = tvm.cuda()
        n = CLUSTERS * RANKS * THREADS
        out = tvm.runtime.tensor(np.full(n, -1, "int32"), dev)
        hits = tvm.runtime.tensor(np.zeros(n, "int32"), dev)
        mod["main"](out, hits)
        o, h = out.numpy(), hits.numpy()
        print("elements written once:", int((h == 1).sum()), "of", n, "| never:", int((h == 0).sum()),
              "| more than once:", int((h > 1).sum()))
        print("writer of the first element of each 64:", o[::THREADS].tolist())
