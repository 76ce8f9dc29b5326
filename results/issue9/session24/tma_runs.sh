# Session 24: the TMA mainloop (schedules/cuda/tma_source.py) against the cp.async one, per cluster
# shape, on the b16 1x1 convs of the bench: TEFUSE_TMA=CMxCN routes every wgmma kernel through it
# (experimental switch). Each setting in its own process and kernel cache (the switch is not in
# the cache key). Usage: bash tma_runs.sh "SHAPES" "CONFIGS" "SETTINGS" [LIMIT]
R=results/issue9/session24/split_tiles.py
for T in $3; do
  if [ "$T" = none ]; then unset TEFUSE_TMA; else export TEFUSE_TMA=$T; fi
  TEFUSE_CACHE_DIR=/tmp/kc_tma_$T$TEFUSE_TMA_OPTS timeout ${4:-170} python3 $R --shapes $1 --configs $2 --workers 12 \
    --splits 1 --json $OUT/tma_$T$TEFUSE_TMA_OPTS.json > $OUT/tma_$T$TEFUSE_TMA_OPTS.log 2>&1
  echo "== $T rc $?"; grep -v "^{" $OUT/tma_$T$TEFUSE_TMA_OPTS.log | grep -v "Warn\|warn" | tail -6
done
unset TEFUSE_TMA
