# Session 24: the TMA mainloop (schedules/cuda/tma_source.py) against the cp.async one, per cluster
# shape, on b16 convs of the bench: TEFUSE_TMA=CMxCN routes every wgmma kernel through it
# (experimental switch), TEFUSE_TMA_STAGES=N|max overrides its stage count. Each setting in its own
# process and kernel cache. Usage: bash tma_runs.sh "SHAPES" "CONFIGS" "SETTINGS" [LIMIT]
# (SETTINGS: none or CMxCN, e.g. "none 1x1 2x1"). At 91df990 and 77a60f7 a TEFUSE_TMA_OPTS switch
# (prefetch, lag2, relaxed) named the files instead; relaxed arrives and the map prefetch are now
# always on, lag2 is gone.
R=results/issue9/session24/split_tiles.py
for T in $3; do
  if [ "$T" = none ]; then unset TEFUSE_TMA; else export TEFUSE_TMA=$T; fi
  tag=${T}_s${TEFUSE_TMA_STAGES:-cfg}
  TEFUSE_CACHE_DIR=/tmp/kc_tma_$tag timeout ${4:-170} python3 $R --shapes $1 --configs $2 --workers 12 \
    --splits 1 --json $OUT/tma_$tag.json > $OUT/tma_$tag.log 2>&1
  echo "== $tag rc $?"; grep -v "^{" $OUT/tma_$tag.log | grep -v "Warn\|warn" | tail -6
done
unset TEFUSE_TMA
