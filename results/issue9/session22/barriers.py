"""Experiment (not part of tefuse): fewer __syncthreads a k step in the wgmma kernels, edited into
the CUDA source in TVM's post-processing hook before nvcc, then timed by the conv bench in this
process (give each setting a fresh TEFUSE_CACHE_DIR: the kernel cache does not see the edit).

A pipelined wgmma k step holds four barriers: TVM's after its cp.async wait (a wait of more
groups than are in flight: a no-op), the device function's after its own wait and the proxy
fence, the function's after `wgmma.wait_group 1`, and TVM's after the call (before the copies
that overwrite the stage the previous batch read).
- DROP_FN_POST=1: the function's barrier after wgmma.wait_group 1 (TVM's follows at once).
- DROP_TVM_PRE=1: TVM's barrier between its wait and the call (the function's wait, fence and
  barrier follow at once).
    DROP_FN_POST=1 TEFUSE_CACHE_DIR=/tmp/kc_p python barriers.py conv --precision fp16 --batch 16 ...
"""
import os
import re
import sys

import tvm_ffi

POST = os.environ.get("DROP_FN_POST") == "1"
PRE = os.environ.get("DROP_TVM_PRE") == "1"
edits = [0, 0]
POST_RE = re.compile(r'(asm volatile\("wgmma\.wait_group\.sync\.aligned 1;\\n" ::: "memory"\);)\n  __syncthreads\(\);')
PRE_RE = re.compile(r"(tvm_builtin_ptx_cp_async_wait_group_async_wait_group_\d+\(\);\n\s*)__syncthreads\(\);\n(\s*tefuse_wgmma_)")


def edit(code, target=None):
    if POST:
        code, n = POST_RE.subn(r"\1", code)
        edits[0] += n
    if PRE:
        code, n = PRE_RE.subn(r"\1\2", code)
        edits[1] += n
    return code


tvm_ffi.register_global_func("tvm_callback_cuda_postproc", edit, override=True)
from tefuse.bench.precision import main  # noqa: E402

rc = main(sys.argv[1:])
print(f"DROP_FN_POST={int(POST)} DROP_TVM_PRE={int(PRE)}: {edits} edits", file=sys.stderr)
sys.exit(rc)
