"""Experiment (not part of tefuse): is a memory-bound conv slow because its co-resident blocks move
in lockstep (every SM loading, then every SM storing)? Delay the blocks of odd blockIdx.y by
STAGGER_NS nanoseconds at kernel start, so that half of them load while the others store, and time
the conv bench's cases. The CUDA source is edited in TVM's post-processing hook, so the build runs in
this process (TEFUSE_CACHE_DIR must be a fresh folder per value).
    STAGGER_NS=1000 TEFUSE_CACHE_DIR=/tmp/kc_s1000 python stagger.py conv --precision fp16 --batch 16 ...
"""
import os
import re
import sys

import tvm_ffi

NS = int(os.environ.get("STAGGER_NS", "0"))
patched = [0]
KERNEL = re.compile(r'(extern "C" __global__ void __launch_bounds__\(\d+\) main_kernel\([^)]*\) \{\n)')


def stagger(code, target=None):
    if NS:
        code, n = KERNEL.subn(r"\1  if (blockIdx.y & 1) __nanosleep(%d);\n" % NS, code)
        patched[0] += n
    return code


tvm_ffi.register_global_func("tvm_callback_cuda_postproc", stagger, override=True)
from tefuse.bench.precision import main  # noqa: E402

rc = main(sys.argv[1:])
print(f"STAGGER_NS={NS}: {patched[0]} kernels patched", file=sys.stderr)
sys.exit(rc)
