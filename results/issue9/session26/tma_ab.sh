# Session 26: the TMA mainloop (no longer serialized by ptxas, c632788) against cp.async on the whole
# b16 fp16 conv bench (ab_bench.py: untuned configs, split-K by policy), each setting in its own
# process and kernel cache. SETTINGS: "none", "1x1", "2x1", "1x1max" (TEFUSE_TMA_STAGES=max).
# Usage: bash tma_ab.sh "SETTINGS" [LIMIT] [BATCH]
AB=results/issue9/session25/ab_bench.py
for T in $1; do
  unset TEFUSE_TMA TEFUSE_TMA_STAGES
  case $T in none) ;; *max) export TEFUSE_TMA=${T%max} TEFUSE_TMA_STAGES=max ;; *) export TEFUSE_TMA=$T ;; esac
  TEFUSE_CACHE_DIR=/tmp/kc_ab_$T timeout ${2:-120} python3 $AB --precisions fp16 --batch ${3:-16} \
    --json $OUT/tma_ab_$T.json > $OUT/tma_ab_$T.log 2>&1
  echo "== $T rc $?"; grep "builds in" $OUT/tma_ab_$T.log; tail -1 $OUT/tma_ab_$T.log | cut -c1-300
done
unset TEFUSE_TMA TEFUSE_TMA_STAGES
