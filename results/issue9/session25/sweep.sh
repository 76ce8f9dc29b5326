# Session 25: each losing b16 conv's untuned pick beside neighbouring tiles and stage counts
# (sweep_tiles.py), one group of shapes a process; results under $OUT. Run from the snapshot root
# after the usual setup (COMMANDS.md).
R=results/issue9/session25/sweep_tiles.py
run() {  # name shapes configs limit
  TEFUSE_CACHE_DIR=/tmp/kc_sweep timeout $4 python3 $R --shapes $2 --configs $3 --workers 12 --splits 1 \
    --json $OUT/sweep_$1.json > $OUT/sweep_$1.log 2>&1
  echo "== $1 rc $?"; grep "^best\|builds in" $OUT/sweep_$1.log
}
run shallow "5 7 2" "128x128s3 128x128s2 128x128s1 128x64s2 128x64s3 64x128s2 256x128s2 128x256s2" 170
run deep "12 9" "64x64s4 64x64s6 64x64s8 64x64s3 64x128s4 64x128s6 128x64s4" 120
run wide "13" "128x128s3 128x128s4 128x128s6 64x128s4 64x128s6 128x256s3" 70
run win3x3 "8" "64x128s4 64x128s6 64x128s8 64x64s4 128x128s3" 70
