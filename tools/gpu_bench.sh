#!/usr/bin/env bash
# GPU studies, each a mode run from the repository root on a machine with a CUDA GPU; results
# land under $OUT (default /tmp/out).
#
#   bash tools/gpu_bench.sh tests      # GPU tests + tuning study (3 ResNet-50 shapes)
#   bash tools/gpu_bench.sh models     # tune ResNet-50's kernels, then bench models
#     (or its two halves: tune-resnet50, then bench-models; BATCH=16 for batch 16)
#   bash tools/gpu_bench.sh builds     # build time (NVRTC/nvcc, 1/all jobs); batch 1 and 16
#   bash tools/gpu_bench.sh gpu-tests  # the GPU tests alone
#   bash tools/gpu_bench.sh tune-fp16  # fp16 records for MODELS x BATCHES (TUNE_SECONDS each)
#   MODELS="swin_t bert" bash tools/gpu_bench.sh untuned-zoo # those zoo models untuned (--no-db), batch
#     1 and 32, one process a model, the models spread over the GPUs; merge the z_M.json files into
#     benchmarks/untuned_fp16.json with `--merge`
#   bash tools/gpu_bench.sh tuned-zoo  # the untuned zoo tuned TUNE_MINUTES (10) a model and batch
#     first, SIDE (1) shards a GPU at once (SHARDS, default SIDE times the GPU count); RESUME_DIR:
#     an earlier call's $OUT (its rows kept, its tuning logs resumed); MODELS: these zoo models
#     only (default all); ROWS="m:b ...": these (model, batch) rows, a shard each (its files named
#     m_bB), all at once. The shards at once share the host's cores (--parallel). With more shards
#     than GPUs the rows tuned side by side share a GPU (their torch.compile peers left out), so
#     each shard's rows are then measured again from its log, all shards built at once and timed
#     one at a time a GPU (--gpu-turn; tuned_alone_K.json, the ones to publish); merge the shards'
#     JSONs with `--merge`
#   bash tools/gpu_bench.sh tune-quant # int8 and fp8 ResNet-50 at batch 256 (QUANT_BATCH) tuned where
#     no record covers a kernel (QUANT_TRIALS, 24, each), one precision a GPU, then the quantized
#     table at batch 1, 32 and 256 in one process; the tuning logs land in $OUT for distilling
#     into the shipped ones. QUANT_MODEL=vit_b_16 QUANT_BATCH=32: ViT-B/16's kernels (one task a
#     structure: its layers' scales apart), then its table at that batch; QUANT_MODEL=bert: the
#     zoo's BERT-base; QUANT_FAST=1: fp8 with fast accumulation (tuning and table)
#   bash tools/gpu_bench.sh quant-transformers # BERT-base (zoo suite) and ViT-B/16 (models suite) at
#     batch 32 in int8, fp8, fp8 with --fp8-fast-accum and fp16, each model's rows in one process
#   bash tools/gpu_bench.sh rpc-scaleout # ResNet-50's kernels tuned on the first GPU locally, then
#     through a tracker and one rpc_server a GPU on this host (TRIALS_RPC, 48, a kernel): the
#     RPC rows of benchmarks/scaleout.json
#   bash tools/gpu_bench.sh sources    # kernel fingerprints of an older checkout in .baseline/
#     against this one (or its halves, one call each: sources-before, then sources-after with
#     BEFORE=the first's JSON)
set -uo pipefail
OUT=${OUT:-/tmp/out}
TRIALS=${TRIALS:-64}  # per chain and tuner in the study
MODEL_TRIALS=${MODEL_TRIALS:-32}  # per ResNet-50 kernel
BATCH=${BATCH:-1}  # of the models mode
TUNE_SECONDS=${TUNE_SECONDS:-3000}  # cut tuning short (the log keeps what was measured)
mkdir -p "$OUT" /tmp/tefuse
export PYTHONUNBUFFERED=1 TEFUSE_USER_DB=/tmp/tefuse/user.jsonl
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
# schedules/ imports as tefuse.schedules only once installed (a package-dir mapping)
python3 -c "import tefuse.schedules" 2>/dev/null \
  || python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . >/dev/null 2>&1 \
  || { echo "could not install tefuse (pip install -e .)"; exit 1; }
case "${1:-tests}" in
sources|sources-before|sources-after)
  # the torchvision models (with the shipped records) built by the checkout in .baseline/ and by
  # this one, in fp32 and fp16; every kernel's CUDA must match. .baseline/ holds an older tefuse
  # with its schedules inside (`git archive REV tefuse schedules | tar -x -C .baseline &&
  # mv .baseline/schedules .baseline/tefuse/`); both read this checkout's shipped records.
  export TEFUSE_SYSTEM_DB=$PWD/tefuse/tuning_logs
  MODELS=${MODELS:-resnet50 mobilenet_v2 vit_b_16}
  SRC_ARGS="--zoo --torchvision $MODELS --precision fp32 fp16"
  if [ "$1" != sources-after ]; then
    PYTHONPATH=.baseline:$PYTHONPATH python3 tefuse/bench/sources.py $SRC_ARGS --json "$OUT/sources_before.json" \
      2>&1 | grep -v "INFO\|Warning\|warn" | tail -2
  fi
  if [ "$1" != sources-before ]; then
    BEFORE=${BEFORE:-$OUT/sources_before.json}
    python3 -m tefuse.bench.sources $SRC_ARGS --json "$OUT/sources_after.json" --compare "$BEFORE" \
      2>&1 | grep -v "INFO\|Warning\|warn" | tail -40
  fi
  ;;
tests|gpu-tests)
  python3 -m pytest -m gpu tests -q -p no:cacheprovider 2>&1 | tee "$OUT/gpu_tests.log" | tail -15
  ;;&
tests)
  rm -rf /tmp/tefuse/study && mkdir -p /tmp/tefuse/study
  python3 -m tefuse.bench.tuning --trials "$TRIALS" --workdir /tmp/tefuse/study --json "$OUT/study.json" \
    > "$OUT/study.log" 2>&1
  grep -v " INFO\|tefuse\.\(codegen\|tune\)" "$OUT/study.log" | tail -8
  cat /tmp/tefuse/study/*.jsonl > "$OUT/study_records.jsonl"
  ;;
tune-resnet50|models)
  # export ResNet-50 at $BATCH and tune its kernels; the log is written under $OUT as it grows
  # (a run cut short keeps it) and `tefuse tune` resumes from it when run again
  LOG="$OUT/resnet50_b$BATCH.jsonl"
  [ -f "/tmp/tefuse/resnet50_b$BATCH.jsonl" ] && cp "/tmp/tefuse/resnet50_b$BATCH.jsonl" "$LOG"
  python3 -c "from tefuse.bench.models import export_torchvision as e; from pathlib import Path; \
e('resnet50', $BATCH, Path('/tmp/tefuse/resnet50_b$BATCH.onnx'))" 2>/dev/null
  timeout "$TUNE_SECONDS" python3 -m tefuse tune "/tmp/tefuse/resnet50_b$BATCH.onnx" -t cuda \
    --trials "$MODEL_TRIALS" --tuner xgb --log "$LOG" --no-progress > "$OUT/tune_resnet50.log" 2>&1
  echo "tune exit $?; $(wc -l < "$LOG") records"; tail -3 "$OUT/tune_resnet50.log"
  cp "$LOG" "/tmp/tefuse/resnet50_b$BATCH.jsonl"
  ;;&
tune-fp16)
  # the fp16 kernels `build --precision fp16` makes (NHWC), one log per model and batch under $OUT
  for m in ${MODELS:-resnet50 mobilenet_v2 vit_b_16}; do for b in ${BATCHES:-1 32}; do
    ONNX=/tmp/tefuse/${m}_b$b.onnx LOG="$OUT/fp16_${m}_b$b.jsonl"
    # resume: what this machine tuned before, else the logs under RESUME_DIR
    for old in "/tmp/tefuse/fp16_${m}_b$b.jsonl" "${RESUME_DIR:-.}/fp16_${m}_b$b.jsonl"; do
      [ -f "$old" ] && { cat "$old" > "$LOG"; break; }
    done
    python3 -c "from tefuse.bench.models import export_torchvision as e; from pathlib import Path; \
e('$m', $b, Path('$ONNX'))" >/dev/null 2>&1 || { echo "$m b$b: export failed"; continue; }
    # TUNER and TUNE_ARGS: another search (TUNER=grid TUNE_ARGS="--only intrin=wgmma": every wgmma config)
    timeout "$TUNE_SECONDS" python3 -m tefuse tune "$ONNX" -t cuda --precision fp16 --trials "$MODEL_TRIALS" \
      --tuner "${TUNER:-xgb}" ${TUNE_ARGS:-} --log "$LOG" --no-progress > "/tmp/tefuse/tune_${m}_b$b.log" 2>&1
    echo "$m b$b: tune exit $?; $(wc -l < "$LOG" 2>/dev/null) records; $(grep -c 'best [0-9]' "/tmp/tefuse/tune_${m}_b$b.log") kernels done"
    cp "$LOG" /tmp/tefuse/ 2>/dev/null  # kept beside the ONNX exports for the next mode
  done; done
  ;;
bench-models|models)
  # fallback configs only, then with the new records (TEFUSE_SYSTEM_DB: the shipped logs + them)
  F=" INFO\|schedule:\|Warning\|warn\|torch.onnx"
  python3 -m tefuse.bench.models resnet50 mobilenet_v2 --batch "$BATCH" --no-db --workdir /tmp/tefuse \
    --json "$OUT/models_fallback.json" 2>&1 | grep -v "$F" | tail -2
  TEFUSE_SYSTEM_DB="tuning_logs:/tmp/tefuse/resnet50_b$BATCH.jsonl" python3 -m tefuse.bench.models resnet50 \
    --batch "$BATCH" --workdir /tmp/tefuse --json "$OUT/models_tuned.json" 2>&1 | grep -v "$F" | tail -1
  ;;
untuned-zoo)
  GPUS=$(nvidia-smi -L | wc -l)
  set -- ${MODELS:?untuned-zoo: MODELS names the zoo models to measure}
  for g in $(seq 0 $((GPUS - 1))); do
    ( k=0
      for m in "$@"; do
        if [ $((k % GPUS)) -eq "$g" ]; then
          CUDA_VISIBLE_DEVICES=$g python3 -m tefuse.bench.precision zoo --models "$m" --precision fp16 --batch 1 32 \
            --no-db --workdir "/tmp/tefuse/z$g" --json "$OUT/z_$m.json" 2>&1 | grep "^zoo "
        fi
        k=$((k + 1))
      done ) &
  done
  wait
  ;;
tuned-zoo)
  GPUS=$(nvidia-smi -L | wc -l)
  SEL=() TAG=()  # each shard's rows and its files' tag: ROWS' (model:batch) one a shard, tagged by
  # the row (so RESUME_DIR finds its files whatever the order), else a shard of MODELS x BATCHES
  if [ -n "${ROWS:-}" ]; then
    for row in $ROWS; do
      case "$row" in *?:[0-9]*) ;; *) echo "tuned-zoo: ROWS takes model:batch, not '$row'" >&2; exit 2;; esac
      SEL+=("--batch ${row#*:} --models ${row%:*}") TAG+=("${row%:*}_b${row#*:}")
    done
    SHARDS=${#SEL[@]}
  else
    SIDE=${SIDE:-1}  # tuning processes a GPU at once
    SHARDS=${SHARDS:-$((GPUS * SIDE))}
    for k in $(seq "$SHARDS"); do
      SEL+=("--batch ${BATCHES:-1 32} ${MODELS:+--models $MODELS} --shard $k/$SHARDS") TAG+=("$k")
    done
  fi
  PARALLEL=$(( $(nproc) / SHARDS )); [ "$PARALLEL" -ge 1 ] || PARALLEL=1  # all shards share the host's cores
  PEERS=; [ "$SHARDS" -gt "$GPUS" ] && PEERS=--no-compile  # side by side: the rows published are measured after
  for k in $(seq "$SHARDS"); do
    t=${TAG[$((k - 1))]}
    for f in "tuned_$t.json" "zoo_tuning_$t.jsonl"; do  # resume: the rows measured, the trials made
      [ -f "${RESUME_DIR:-/nonexistent}/$f" ] && cp "$RESUME_DIR/$f" "$OUT/$f"
    done
    CUDA_VISIBLE_DEVICES=$(((k - 1) % GPUS)) TEFUSE_USER_DB="$OUT/zoo_tuning_$t.jsonl" timeout "$TUNE_SECONDS" \
      python3 -m tefuse.bench.precision zoo --precision fp16 ${SEL[$((k - 1))]} \
      --tune-minutes "${TUNE_MINUTES:-10}" --resume --parallel "$PARALLEL" $PEERS --workdir "/tmp/tefuse/tune_$t" \
      --json "$OUT/tuned_$t.json" > "/tmp/tefuse/tuned_zoo_$t.log" 2>&1 &
  done
  wait
  for t in "${TAG[@]}"; do echo "shard $t: $(grep -c '^zoo ' "/tmp/tefuse/tuned_zoo_$t.log") rows"; done
  if [ "$SHARDS" -gt "$GPUS" ]; then  # measured side by side: again from each shard's log, the shards of a
    # GPU built and compiled at once and timed in turn (--gpu-turn: one lock a GPU)
    for k in $(seq "$SHARDS"); do
      g=$(((k - 1) % GPUS)) t=${TAG[$((k - 1))]}
      CUDA_VISIBLE_DEVICES=$g TEFUSE_USER_DB="$OUT/zoo_tuning_$t.jsonl" python3 -m tefuse.bench.precision zoo \
        --precision fp16 ${SEL[$((k - 1))]} --gpu-turn "/tmp/tefuse/gpu_turn_$g" --workdir "/tmp/tefuse/alone_$t" \
        --json "$OUT/tuned_alone_$t.json" 2>&1 | grep "^zoo " &
    done
    wait
  fi
  ;;
tune-quant)
  QUANT_MODEL=${QUANT_MODEL:-resnet50}
  SUITE=models; case "$QUANT_MODEL" in bert|distilbert|gpt2) SUITE=zoo;; esac  # transformers: the zoo's
  FAST=; TAG=; [ "${QUANT_FAST:-0}" = 1 ] && FAST=--fp8-fast-accum TAG=_fast  # fp8 with fast accumulation
  GPUS=$(nvidia-smi -L | wc -l)
  [ "$GPUS" -gt 0 ] || { echo "tune-quant: no GPU"; exit 1; }
  k=0
  for prec in int8 fp8; do  # one precision a GPU where there are two, else one after the other
    mkdir -p "/tmp/tefuse/$prec"  # a workdir each: both export the model
    CUDA_VISIBLE_DEVICES=$((k % GPUS)) TEFUSE_USER_DB="$OUT/quant_tuning_$prec$TAG.jsonl" timeout "$TUNE_SECONDS" \
      python3 -m tefuse.bench.precision $SUITE --models "$QUANT_MODEL" --precision "$prec" --batch "${QUANT_BATCH:-256}" \
      --no-compile --tune "${QUANT_TRIALS:-24}" --untuned-only $FAST --workdir "/tmp/tefuse/$prec" \
      --json "/tmp/tefuse/quant_tuned_$prec.json" > "/tmp/tefuse/quant_$prec.log" 2>&1 &
    k=$((k + 1))
    [ "$GPUS" -gt 1 ] || wait
  done
  wait
  # the table: every precision in one process, on both logs' records
  cat "$OUT"/quant_tuning_*.jsonl > /tmp/tefuse/quant_user.jsonl
  BATCHES_Q="1 32 ${QUANT_BATCH:-256}"; [ "$QUANT_MODEL" = resnet50 ] || BATCHES_Q=${QUANT_BATCH:-256}
  TEFUSE_USER_DB=/tmp/tefuse/quant_user.jsonl python3 -m tefuse.bench.precision $SUITE --models "$QUANT_MODEL" \
    --precision int8 fp8 fp16 --batch $BATCHES_Q --no-compile $FAST --workdir /tmp/tefuse \
    --json "$OUT/models_quant_${QUANT_MODEL}$TAG.json" 2>&1 | grep "^$SUITE "
  ;;
quant-transformers)
  for fast in "" --fp8-fast-accum; do  # (the flag applies to every fp8 row of a run)
    tag=${fast:+_fast}
    python3 -m tefuse.bench.precision zoo --models bert --precision fp8 int8 fp16 --batch 32 --no-compile $fast \
      --workdir /tmp/tefuse --json "$OUT/quant_bert$tag.json" 2>&1 | grep "^zoo "
    python3 -m tefuse.bench.precision models --models vit_b_16 --precision fp8 int8 fp16 --batch 32 --no-compile $fast \
      --workdir /tmp/tefuse --json "$OUT/quant_vit$tag.json" 2>&1 | grep "^models "
  done
  ;;
rpc-scaleout)
  GPUS=$(nvidia-smi -L | wc -l)
  # each in a process group of its own (setsid), killed whole at the end: a server serves from a
  # child process that outlives a plain kill of its parent, and a server left over from an earlier
  # call would register with this tracker too (two servers on one GPU, timing each other)
  if pgrep -f "tvm.exec.rp[c]_" >/dev/null; then echo "rpc-scaleout: a TVM tracker or server is already running"; exit 1; fi
  # the servers' processes must not start CUDA before forking a session (docs/tuning.md)
  TVM_FFI_DISABLE_TORCH_C_DLPACK=1 setsid python3 -m tvm.exec.rpc_tracker --host 127.0.0.1 --port 9190 \
    > "$OUT/rpc_tracker.log" 2>&1 &
  GROUPS_STARTED=$!
  sleep 3
  for g in $(seq 0 $((GPUS - 1))); do
    CUDA_VISIBLE_DEVICES=$g TVM_FFI_DISABLE_TORCH_C_DLPACK=1 PYTORCH_NVML_BASED_CUDA_CHECK=1 \
      setsid python3 -m tvm.exec.rpc_server --tracker 127.0.0.1:9190 --key local --port $((9090 + 5 * g)) \
      > "$OUT/rpc_server_$g.log" 2>&1 &
    GROUPS_STARTED="$GROUPS_STARTED $!"
  done
  trap 'for p in $GROUPS_STARTED; do kill -- -$p 2>/dev/null; done' EXIT
  sleep 8
  python3 -m tefuse.bench.scaleout --devices 0 --rpc 127.0.0.1:9190 --key local --trials "${TRIALS_RPC:-48}" \
    --servers "$GPUS" --json "$OUT/scaleout_rpc.json" > "$OUT/scaleout_rpc.log" 2>&1  # whole: a failure's traceback
  grep -v " INFO" "$OUT/scaleout_rpc.log" | tail -4
  ;;
builds)
  F=" INFO\|schedule:\|Warning\|warn\|torch.onnx"
  for mode_jobs in nvrtc:1 nvcc:1 nvcc:16; do
    TVM_CUDA_COMPILE_MODE=${mode_jobs%:*} python3 -m tefuse.bench.models resnet50 --batch 1 \
      --jobs "${mode_jobs#*:}" --workdir /tmp/tefuse --json "$OUT/build_${mode_jobs/:/_j}.json" 2>&1 \
      | grep -v "$F" | tail -1 | sed "s/^/${mode_jobs}: /"
  done
  python3 -m tefuse.bench.models resnet50 mobilenet_v2 --batch 1 16 --workdir /tmp/tefuse \
    --json "$OUT/models_b1_b16.json" 2>&1 | grep -v "$F" | tail -4
  ;;
esac
