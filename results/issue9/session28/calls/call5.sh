source .gpu/b/env.sh && cd .tunesnap && export TEFUSE_SYSTEM_DB=$PWD/tuning_logs TVM_CUDA_COMPILE_MODE=nvcc TEFUSE_USER_DB=/tmp/tefuse/user.jsonl && python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . >/dev/null 2>&1
timeout 330 python3 -m pytest -m gpu tests/gpu -n 4 -q -p no:cacheprovider > $OUT/gpu_tests2.log 2>&1
echo "gpu suite rc $?"; tail -3 $OUT/gpu_tests2.log
TEFUSE_CACHE_DIR=/tmp/kcB timeout 150 python3 results/issue9/session25/ab_bench.py --precisions fp16 --json $OUT/ab_b16_B.json > $OUT/ab_b16_B.log 2>&1
echo "ab B rc $?"; tail -1 $OUT/ab_b16_B.log
TEFUSE_CACHE_DIR=/tmp/kcC timeout 150 python3 results/issue9/session25/ab_bench.py --precisions bf16 --json $OUT/ab_b16_bf16.json > $OUT/ab_b16_bf16.log 2>&1
echo "ab bf16 rc $?"; tail -1 $OUT/ab_b16_bf16.log
