# Session 26: where the TMA mainloop's warps wait, against the cp.async one: Nsight Compute's full set with
# SASS-level sampling on 2048x7x7->512 b16 (untuned 64x64, one CTA an SM), TEFUSE_TMA=1x1 and without.
# Writes the reports and the per-instruction source page (CSV) under $OUT.
P="python3 -m tefuse.bench.precision conv --precision fp16 --batch 16 --layout NHWC --shapes 12"
for T in 1x1 none; do
  if [ $T = none ]; then unset TEFUSE_TMA; else export TEFUSE_TMA=$T; fi
  TEFUSE_CACHE_DIR=/tmp/kc_ncu_$T timeout ${1:-200} ncu --set full --import-source yes -k regex:main_kernel --launch-skip 5 \
    --launch-count 1 -o $OUT/ncu12_$T $P > $OUT/ncu12_$T.log 2>&1; echo "== $T rc $?"
  ncu -i $OUT/ncu12_$T.ncu-rep --page source --csv --print-source sass > $OUT/ncu12_${T}_sass.csv 2>&1
  ncu -i $OUT/ncu12_$T.ncu-rep --section WarpStateStats --section SpeedOfLight --section SchedulerStats > $OUT/ncu12_${T}_summary.txt 2>&1
  grep -E "Duration|Warp Cycles Per Issued|Issued Warp|No Eligible|Stall" $OUT/ncu12_${T}_summary.txt | head -12
  wc -c $OUT/ncu12_${T}_sass.csv
done
unset TEFUSE_TMA
