source .gpu/b/env.sh && cd .tunesnap && export TEFUSE_SYSTEM_DB=$PWD/tuning_logs TVM_CUDA_COMPILE_MODE=nvcc TEFUSE_USER_DB=/tmp/tefuse/user.jsonl && python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . >/dev/null 2>&1
timeout 560 python3 -m pytest -m gpu tests/gpu -n 4 -q -p no:cacheprovider --durations=8 > $OUT/gpu_tests_head.log 2>&1
echo "gpu suite rc $?"; tail -14 $OUT/gpu_tests_head.log
