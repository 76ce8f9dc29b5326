# The first GPU call planned for session 25 (WGMMA_NOTES "Session 24", Next 0-1), about 6 minutes:
# the TMA mainloop's GPU test, then its deepest pipeline (TEFUSE_TMA_STAGES=max) beside cp.async
# on the deep small grids and two large-grid 1x1 convs at batch 16. Run from the snapshot's root
# after the usual setup (COMMANDS.md); results under $OUT.
python3 -m pytest -m gpu tests/gpu/test_tma_gpu.py -q -p no:cacheprovider 2>&1 | tee $OUT/gpu_tests_tma.log | tail -3
S="12 13 9 7 2"
C="64x64s4 64x128s4 128x128s3"
bash results/issue9/session24/tma_runs.sh "$S" "$C" none 150
TEFUSE_TMA_STAGES=max bash results/issue9/session24/tma_runs.sh "$S" "$C" "1x1 2x1" 150
