"""Experiments on the CUDA source of tefuse's kernels (not part of tefuse), edited in TVM's
post-processing hook before nvcc, then timed by the conv bench in this process (give each setting
a fresh TEFUSE_CACHE_DIR: the kernel cache does not see the edit):
- STAGGER_NS=N: blocks of odd blockIdx.y sleep N ns at kernel start. Is a memory-bound conv slow
  because co-resident blocks move in lockstep (every SM loading, then every SM storing)?
- MIN_BLOCKS=B: __launch_bounds__(threads, B): ptxas keeps registers to B blocks an SM (the
  64->256 1x1 conv at batch 16: 90 registers, 2 blocks of 8 warps an SM, latency-bound).
- CP_ASYNC_CA=1: 16-byte cp.async as .ca (through L1) instead of TVM's .cg (L2 only): a 3x3 or
  7x7 conv's im2col tile copies read each input pixel for several taps.
    STAGGER_NS=1000 TEFUSE_CACHE_DIR=/tmp/kc_s1000 python source_edits.py conv --precision fp16 ...
"""
import os
import re
import sys

import tvm_ffi

NS = int(os.environ.get("STAGGER_NS", "0"))
MIN_BLOCKS = int(os.environ.get("MIN_BLOCKS", "0"))
CA = os.environ.get("CP_ASYNC_CA") == "1"
patched = [0]
KERNEL = re.compile(r'(extern "C" __global__ void __launch_bounds__\(\d+\) main_kernel\([^)]*\) \{\n)')
BOUNDS = re.compile(r"__launch_bounds__\((\d+)\)")


def edit(code, target=None):
    if NS:
        code, n = KERNEL.subn(r"\1  if (blockIdx.y & 1) __nanosleep(%d);\n" % NS, code)
        patched[0] += n
    if MIN_BLOCKS:
        code, n = BOUNDS.subn(r"__launch_bounds__(\1, %d)" % MIN_BLOCKS, code)
        patched[0] += n
    if CA:
        code, n = re.subn(r"cp\.async\.cg\.shared\.global", "cp.async.ca.shared.global", code)
        patched[0] += n
    return code


tvm_ffi.register_global_func("tvm_callback_cuda_postproc", edit, override=True)
from tefuse.bench.precision import main  # noqa: E402

rc = main(sys.argv[1:])
print(f"STAGGER_NS={NS} MIN_BLOCKS={MIN_BLOCKS} CP_ASYNC_CA={int(CA)}: {patched[0]} edits", file=sys.stderr)
sys.exit(rc)
