source .gpu/b/env.sh && cd .tunesnap && export TEFUSE_SYSTEM_DB=$PWD/tuning_logs TVM_CUDA_COMPILE_MODE=nvcc TEFUSE_USER_DB=/tmp/tefuse/user.jsonl && python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . >/dev/null 2>&1
TEFUSE_CACHE_DIR=/tmp/kcD timeout 200 python3 results/issue9/session25/ab_bench.py --precisions fp16 --json $OUT/ab_b16_C.json > $OUT/ab_b16_C.log 2>&1
echo "ab C rc $?"; tail -1 $OUT/ab_b16_C.log
timeout 150 bash tefuse/bench/precision_steps.sh build
