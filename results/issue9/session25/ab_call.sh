# Session 25's staging A/B on the H100 (from the snapshot root after the usual setup): the
# tensor-core GPU tests at this commit, then the b16 conv bench with float32 staging
# (TEFUSE_WIDE_STAGING=1) and with 16-bit staging (the default), each in its own kernel cache.
timeout ${TLIM:-200} python3 -m pytest -m gpu tests/gpu/test_tensorcore_gpu.py tests/gpu/test_conv_chains_gpu.py \
  tests/gpu/test_plan_gpu.py tests/gpu/test_dense_gpu.py tests/gpu/test_conv2d_implicit_gemm_gpu.py -n 4 -q \
  -p no:cacheprovider > $OUT/gpu_tests_staging.log 2>&1; echo "gpu tests rc $?"; tail -2 $OUT/gpu_tests_staging.log
for w in 1 ""; do tag=${w:+wide}; tag=${tag:-narrow}
  TEFUSE_WIDE_STAGING=$w TEFUSE_CACHE_DIR=/tmp/kc_$tag timeout ${BLIM:-150} python3 results/issue9/session25/ab_bench.py --precisions ${PRECS:-fp16} \
    --json $OUT/ab_$tag.json > $OUT/ab_$tag.log 2>&1; echo "== $tag rc $?"; grep "builds in" $OUT/ab_$tag.log; tail -1 $OUT/ab_$tag.log
done
