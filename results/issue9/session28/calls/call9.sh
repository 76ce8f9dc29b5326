source .gpu/b/env.sh && cd .tunesnap && export TEFUSE_SYSTEM_DB=$PWD/tuning_logs TVM_CUDA_COMPILE_MODE=nvcc TEFUSE_USER_DB=/tmp/tefuse/user.jsonl && python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . >/dev/null 2>&1
timeout 150 python3 -m pytest -m gpu tests/gpu/test_cluster_sum_gpu.py -n 5 -q -p no:cacheprovider > $OUT/gpu_tests_cluster.log 2>&1
echo "cluster gpu tests rc $?"; tail -2 $OUT/gpu_tests_cluster.log
TEFUSE_CACHE_DIR=/tmp/kcE timeout 200 python3 results/issue9/session25/ab_bench.py --precisions fp16 --json $OUT/ab_b16_D.json > $OUT/ab_b16_D.log 2>&1
echo "ab D rc $?"; tail -1 $OUT/ab_b16_D.log
