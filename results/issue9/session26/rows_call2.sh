# Session 26, after rows_call.sh: padded rows wrapped (row mod M) instead of clamped to the last row, against
# the predicated zero fill, on the b16 fp16 conv bench. Usage: bash rows_call2.sh [LIMIT]
for p in 1 ""; do tag=${p:+predicated}; tag=${tag:-wrapped}
  TEFUSE_PREDICATED_ROWS=$p TEFUSE_CACHE_DIR=/tmp/kc_rows2_$tag timeout ${1:-125} python3 results/issue9/session25/ab_bench.py \
    --precisions fp16 --json $OUT/rows2_$tag.json > $OUT/rows2_$tag.log 2>&1
  echo "== $tag rc $?"; grep "builds in" $OUT/rows2_$tag.log; tail -1 $OUT/rows2_$tag.log
done
