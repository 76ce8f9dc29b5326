# Session 26: tile copies past the last row clamped (schedules/cuda/clamp_rows.py) against the predicated zero
# fill (TEFUSE_PREDICATED_ROWS=1): the tensor-core GPU tests first, then the b16 fp16 conv bench both ways
# (session 25's ab_bench.py), each in its own process and kernel cache. Usage: bash rows_call.sh [LIMIT]
timeout 240 python3 -m pytest -m gpu tests/gpu/test_tensorcore_gpu.py tests/gpu/test_conv_chains_gpu.py \
  tests/gpu/test_dense_gpu.py tests/gpu/test_onnx_gpu.py tests/gpu/test_narrow_staging_gpu.py -n 4 -q \
  -p no:cacheprovider > $OUT/gpu_tests_rows.log 2>&1; echo "gpu tests rc $?"; tail -2 $OUT/gpu_tests_rows.log
for p in 1 ""; do tag=${p:+predicated}; tag=${tag:-clamped}
  TEFUSE_PREDICATED_ROWS=$p TEFUSE_CACHE_DIR=/tmp/kc_rows_$tag timeout ${1:-130} python3 results/issue9/session25/ab_bench.py \
    --precisions fp16 --json $OUT/rows_$tag.json > $OUT/rows_$tag.log 2>&1
  echo "== $tag rc $?"; grep "builds in" $OUT/rows_$tag.log; tail -1 $OUT/rows_$tag.log
done
