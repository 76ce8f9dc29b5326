# Session 26: untuned wgmma epilogue width 4 (today) against 8, b16 fp16 then bf16 conv bench, one process and
# kernel cache each. Usage: bash vec_call.sh [LIMIT]
for p in fp16 bf16; do for v in 4 8; do
  VEC=$v TEFUSE_CACHE_DIR=/tmp/kc_vec$v timeout ${1:-110} python3 results/issue9/session26/ab_vec.py --precisions $p \
    --json $OUT/vec${v}_$p.json > $OUT/vec${v}_$p.log 2>&1
  echo "== vec $v $p rc $?"; grep "builds in" $OUT/vec${v}_$p.log; tail -1 $OUT/vec${v}_$p.log
done; done
