#!/bin/bash
# Tensor-core measurements on a CUDA GPU (Hopper for the wgmma steps), each STEP a few commands of
# the precision bench or the GPU tests, run from the repository root; results land under $OUT:
#   OUT=/tmp/out bash tools/precision_steps.sh STEP...
# benchmarks/README.md gives the commands behind the published table.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export TEFUSE_CACHE_DIR=/tmp/kc TVM_CUDA_COMPILE_MODE=nvcc TEFUSE_USER_DB=/tmp/tefuse/user.jsonl
mkdir -p /tmp/tefuse
# schedules/ imports as tefuse.schedules only once installed (a package-dir mapping)
python3 -c "import tefuse.schedules" 2>/dev/null \
  || python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . >/dev/null 2>&1 \
  || { echo "could not install tefuse (pip install -e .)"; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
P="python3 -m tefuse.bench.precision"
for step in "$@"; do
  echo "=== $step $(date -u +%T)"
  case $step in
    build)   # one fused conv chain in fp16: a single tensor-core kernel
      python3 -m tefuse.cli build "conv2d(k=64,r=3,pad=1)+bias+batch_norm+relu" -i 16x64x56x56 \
        --precision fp16 -t cuda -e cuda > $OUT/build_fp16.cu 2> $OUT/build_fp16.err
      echo "rc $?; mma.sync/wgmma/wmma lines: $(grep -c -E 'mma.sync|wgmma|wmma::mma_sync' $OUT/build_fp16.cu); __global__: $(grep -c __global__ $OUT/build_fp16.cu)"
      cat $OUT/build_fp16.err ;;
    conv)    $P conv --precision fp16 bf16 --batch 1 16 --layout NHWC --workdir /tmp/tefuse \
               --json $OUT/conv_fp16_bf16.json 2>&1 | tee $OUT/conv_fp16_bf16.log | tail -8 ;;
    convcalls) # the conv suite timed with one call a CUDA graph, then GRAPH_CALLS (10) calls a graph:
             # whether microsecond kernels meet a graph-launch floor (batch-1 times)
             for gc in 1 ${GRAPH_CALLS:-10}; do
               $P conv --precision fp16 bf16 --batch 1 16 --layout NHWC --workdir /tmp/tefuse --graph-calls $gc \
                 --json $OUT/conv_calls$gc.json 2>&1 | tee $OUT/conv_calls$gc.log | tail -4
             done ;;
    convtune) # the fp16 batch-16 cases tuned first (TRIALS a kernel, xgb) into the user database, then timed
             $P conv --precision ${PRECISIONS:-fp16} --batch 16 --layout NHWC --workdir /tmp/tefuse --tune ${TRIALS:-12} \
               --json $OUT/conv_b16_tuned.json 2>&1 | tee $OUT/conv_b16_tuned.log | grep -v "INFO\|Warning\|warn" | tail -18
             cp $TEFUSE_USER_DB $OUT/conv_b16_tuning.jsonl ;;
    convsweep) # every wgmma block tile x stage count (16-byte stores) of the b16 cases SHAPES, grid-tuned
             # into $OUT's log (cut at LIMIT seconds, keeping what was measured), then timed
             TEFUSE_USER_DB=$OUT/conv_b16_sweep.jsonl timeout ${LIMIT:-540} \
               $P conv --precision ${PRECISIONS:-fp16} --batch 16 --layout NHWC --shapes ${SHAPES:-5 7 8 10 13 2} \
               --tune ${TRIALS:-24} --tuner grid --only intrin=wgmma --only vec_out=8 --workdir /tmp/tefuse \
               --json $OUT/conv_b16_sweep.json 2>&1 | tee $OUT/conv_b16_sweep.log | grep -v "INFO\|Warning\|warn" | tail -12 ;;
    ncu)     # Nsight Compute on the b16 conv case SHAPE (default 5): tefuse's kernel (TVM names it main_kernel),
             # then cuDNN's (sm90 xmma / cutlass names, or cuBLAS's nvjet for a 1x1 conv; the float64 reference's kernels do not match)
             S="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis"
             for who in "main_kernel" "sm90_xmma|cutlass|sm80_xmma|nvjet"; do
               ncu --clock-control none --target-processes all -k "regex:$who" --launch-skip ${SKIP:-20} \
                 --launch-count ${COUNT:-3} $S $P conv --precision fp16 --batch 16 --layout NHWC --shapes ${SHAPE:-5} \
                 --workdir /tmp/tefuse > $OUT/ncu_conv${SHAPE:-5}_${who%%|*}.txt 2>&1; echo "ncu $who rc $?"
             done
             grep -h -E "^  [a-zA-Z_].*\(|Duration|DRAM Throughput|Achieved Occupancy|Registers Per|Block Limit (Reg|Shared)" \
               $OUT/ncu_conv${SHAPE:-5}_*.txt | head -60 ;;
    convnosplit)  # the same with every conv one kernel (build's split_k=False): split-K's baseline
             $P conv --precision fp16 bf16 --batch 1 16 --layout NHWC --workdir /tmp/tefuse --no-split-k \
               --json $OUT/conv_fp16_bf16_nosplit.json 2>&1 | tee $OUT/conv_fp16_bf16_nosplit.log | tail -8 ;;
    splitlead) # the split 7x7 convs at batch 16 with the policy's slices, unsplit, and 2 slices
             for sk in "" "--no-split-k" "--split-k 2"; do tag=${sk//[ -]/}
               $P conv --precision fp16 bf16 --batch 16 --layout NHWC --shapes ${SHAPES:-11 12} --workdir /tmp/tefuse $sk \
                 --json $OUT/conv_split_${tag:-policy}.json 2>&1 | tee $OUT/conv_split_${tag:-policy}.log | grep -v "INFO\|Warn" | tail -6
             done ;;
    resnet1) for sk in "" --no-split-k; do  # ResNet-50 fp16 batch 1 with and without split-K
               $P models --models resnet50 --precision fp16 --batch 1 --no-compile --workdir /tmp/tefuse $sk \
                 --json $OUT/models_fp16_resnet50_b1${sk:+_nosplit}.json 2>&1 \
                 | tee $OUT/models_fp16_resnet50_b1${sk:+_nosplit}.log | tail -3; done ;;
    resnet1c) $P models --models resnet50 --precision fp16 --batch 1 --workdir /tmp/tefuse \
               --json $OUT/models_fp16_resnet50_b1_compile.json 2>&1 | tee $OUT/models_fp16_resnet50_b1_compile.log | tail -3 ;;
    vit1)    # ViT-B/16 fp16 batch 1 with split-K (torch.compile a peer too), then without (CUDA-graph peer)
             $P models --models vit_b_16 --precision fp16 --batch 1 --workdir /tmp/tefuse \
               --json $OUT/models_fp16_vit_b1.json 2>&1 | tee $OUT/models_fp16_vit_b1.log | tail -3
             $P models --models vit_b_16 --precision fp16 --batch 1 --no-compile --workdir /tmp/tefuse --no-split-k \
               --json $OUT/models_fp16_vit_b1_nosplit.json 2>&1 | tee $OUT/models_fp16_vit_b1_nosplit.log | tail -3 ;;
    splittests) python3 -m pytest -m gpu tests/gpu/test_tensorcore_gpu.py -k split -q -p no:cacheprovider -n 6 2>&1 \
               | tee $OUT/gpu_tests_split.log | tail -8 ;;
    gemm)    $P gemm --precision fp16 bf16 --gemm 4096x4096x4096 197x2304x768 6272x256x2304 \
               --workdir /tmp/tefuse --json $OUT/gemm_fp16_bf16.json 2>&1 | tee $OUT/gemm_fp16_bf16.log | tail -8 ;;
    gemmvit) # ViT-B/16 b32's four Linears (QKV, out-projection, fc1, fc2) as GEMMs + bias + ReLU beside cuBLAS,
             # untuned: how far the wgmma mainloop is from cuBLAS at K = 768 and 3072
             $P gemm --precision fp16 --gemm 6304x2304x768 6304x768x768 6304x3072x768 6304x768x3072 \
               --workdir /tmp/tefuse --json $OUT/gemm_vit_fp16.json 2>&1 | tee $OUT/gemm_vit_fp16.log | tail -6 ;;
    gemmsweep) # every wgmma block tile x stage count (16-byte stores) of ViT-B/16 b32's four Linears as GEMMs +
             # bias + ReLU, grid-tuned into $OUT's log (cut at LIMIT seconds), then each timed with its best beside cuBLAS
             TEFUSE_USER_DB=$OUT/gemm_vit_sweep.jsonl timeout ${LIMIT:-540} \
               $P gemm --precision fp16 --gemm ${GEMMS:-6304x2304x768 6304x768x768 6304x3072x768 6304x768x3072} \
               --tune ${TRIALS:-40} --tuner grid --only intrin=wgmma --only vec_out=8 --workdir /tmp/tefuse \
               --json $OUT/gemm_vit_sweep.json 2>&1 | tee $OUT/gemm_vit_sweep.log | grep -v "INFO\|Warning\|warn" | tail -8 ;;
    attn)    # the attention op (flash template untuned, then every config grid-tuned into $OUT's log) beside
             # torch's scaled_dot_product_attention, ViT-B/16's shapes at batch 32 and 1
             $P attention --precision fp16 --workdir /tmp/tefuse --json $OUT/attention_fp16.json 2>&1 \
               | tee $OUT/attention_fp16.log | grep -v "INFO\|Warning\|warn" | tail -3
             TEFUSE_USER_DB=$OUT/attention_sweep.jsonl $P attention --precision fp16 --tune ${TRIALS:-18} --tuner grid \
               --workdir /tmp/tefuse --json $OUT/attention_fp16_tuned.json 2>&1 | tee $OUT/attention_fp16_tuned.log \
               | grep -v "INFO\|Warning\|warn" | tail -3 ;;
    vit)     $P models --models vit_b_16 --precision fp16 --batch 1 32 --workdir /tmp/tefuse \
               --json $OUT/models_fp16_vit.json 2>&1 | tee $OUT/models_fp16_vit.log | tail -30 ;;
    vitall)  # ViT with every prologue fused (the fusion before the target's prologue rules), no compile peer
             $P models --models vit_b_16 --precision fp16 --batch 1 32 --workdir /tmp/tefuse --prologue all \
               --no-compile --json $OUT/models_fp16_vit_prologue_all.json 2>&1 \
               | tee $OUT/models_fp16_vit_prologue_all.log | tail -30 ;;
    mobilenet) $P models --models mobilenet_v2 --precision fp16 --batch 1 32 --workdir /tmp/tefuse \
               --json $OUT/models_fp16_mobilenet_v2.json 2>&1 | tee $OUT/models_fp16_mobilenet_v2.log | tail -20 ;;
    resnet)  $P models --models resnet50 --precision fp16 --batch 1 32 --workdir /tmp/tefuse \
               --json $OUT/models_fp16_resnet50.json 2>&1 | tee $OUT/models_fp16_resnet50.log | tail -30 ;;
    tf32)    $P models --models resnet50 --precision tf32 --batch 32 --no-compile --workdir /tmp/tefuse \
               --json $OUT/models_tf32_resnet50.json 2>&1 | tee $OUT/models_tf32_resnet50.log | tail -20 ;;
    tctests) python3 -m pytest -m gpu tests/gpu/test_tensorcore_gpu.py -q -p no:cacheprovider -n 14 2>&1 \
               | tee $OUT/gpu_tests_tensorcore.log | tail -8 ;;
    tunevit) # fp16 records for ViT-B/16's kernels since the weight pass (new GEMM workloads)
             MODELS=vit_b_16 BATCHES="1 32" MODEL_TRIALS=8 TUNE_SECONDS=${TUNE_SECONDS:-200} \
               bash tools/gpu_bench.sh tune-fp16 ;;
    tunesplit) # fp16 records for the split-K kernels at batch 1
             MODELS="resnet50 vit_b_16" BATCHES="1" MODEL_TRIALS=8 TUNE_SECONDS=${TUNE_SECONDS:-240} \
               bash tools/gpu_bench.sh tune-fp16 ;;
    vitsweep) # every wgmma config (16-byte stores) of ViT-B/16's b32 kernels that wgmma takes, after the
             # shipped records' configs; cut at TUNE_SECONDS; then `vittuned` times the model with them
             MODELS=vit_b_16 BATCHES="32" MODEL_TRIALS=40 TUNER=grid TUNE_ARGS="--only intrin=wgmma --only vec_out=8" \
               TUNE_SECONDS=${TUNE_SECONDS:-480} bash tools/gpu_bench.sh tune-fp16 ;;
    vitretune) # ViT-B/16's kernels at batch 1 and 32 tuned again (with one wgmma batch in flight
             # from 3 stages, 2-stage records of its Linears lose to 3),
             # wgmma configs only, into /tmp/tefuse/fp16_vit_b_16_b*.jsonl; then `vittuned` times them
             MODELS=vit_b_16 BATCHES="1 32" MODEL_TRIALS=12 TUNE_ARGS="--only intrin=wgmma" \
               TUNE_SECONDS=${TUNE_SECONDS:-240} bash tools/gpu_bench.sh tune-fp16 ;;
    vittuned) TEFUSE_SYSTEM_DB=$PWD/tuning_logs:/tmp/tefuse/fp16_vit_b_16_b1.jsonl:/tmp/tefuse/fp16_vit_b_16_b32.jsonl \
             $P models --models vit_b_16 --precision fp16 --batch 1 32 --workdir /tmp/tefuse \
               --json $OUT/models_fp16_vit_tuned.json 2>&1 | tee $OUT/models_fp16_vit_tuned.log | tail -6 ;;
    tests)   python3 -m pytest -m gpu tests -q -p no:cacheprovider -n 14 --durations=8 2>&1 \
               | tee $OUT/gpu_tests.log | tail -15 ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
done
