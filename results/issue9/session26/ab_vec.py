"""Experiment (session 26): session 25's ab_bench.py (the conv bench's b16 cases, untuned configs,
split-K by policy) with the untuned wgmma epilogue width `tensorcore_wgmma.VEC_OUT` set from the
environment (VEC=4|8), patched before the build workers fork. VEC_OUT was 4 (session 21) when a
lane's 8 outputs meant two float4 reads of float32 staging; with 16-bit staging (session 25) 8 lanes
are one 16-byte read and one 16-byte store. Run each width in its own kernel cache.

    VEC=8 TEFUSE_CACHE_DIR=/tmp/kc_v8 python ab_vec.py --precisions fp16 --json out.json
"""
import importlib.util
import os
import sys
from pathlib import Path

from tefuse.schedules.cuda import tensorcore_wgmma

tensorcore_wgmma.VEC_OUT = int(os.environ.get("VEC", tensorcore_wgmma.VEC_OUT))
_spec = importlib.util.spec_from_file_location("ab_bench25", Path(__file__).parents[1] / "session25" / "ab_bench.py")
ab = importlib.util.module_from_spec(_spec)
sys.modules["ab_bench25"] = ab
_spec.loader.exec_module(ab)

if __name__ == "__main__":
    print(f"VEC_OUT {tensorcore_wgmma.VEC_OUT}", file=sys.stderr, flush=True)
    sys.exit(ab.main())
