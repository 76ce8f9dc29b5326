# The first GPU calls planned for session 26 (WGMMA_NOTES "Session 25"), from the snapshot root
# after the usual setup (COMMANDS.md); results under $OUT. Load calls: move results/ aside first
# (the tree with .gpu/a passes 64 MiB otherwise).
# Call 1 (about 6 minutes): the whole GPU suite, with tests/gpu/test_narrow_staging_gpu.py (16-bit
# and float32 staging give the same bits), written after session 25's last GPU call.
timeout 400 python3 -m pytest -m gpu tests/gpu -n 4 -q -p no:cacheprovider > $OUT/gpu_tests.log 2>&1
echo "gpu suite rc $?"; tail -2 $OUT/gpu_tests.log
# Call 2 (about 7 minutes): the TMA mainloop against cp.async again, now that its wgmma are no longer
# serialized by ptxas (c632788: no __trap in its barrier waits). Every earlier TMA figure had them
# serialized.
#   bash results/issue9/session24/tma_runs.sh "12 13 9 7 2" "64x64s4 64x128s4 128x128s3" "none 1x1 2x1" 130
#   TEFUSE_TMA_STAGES=max bash results/issue9/session24/tma_runs.sh "12 9" "64x64s4 64x128s4" "1x1 2x1" 100
# Call 3 (one model a call; torch.compile's peer takes minutes): the models and the GEMM with 16-bit
# staging, which session 25 measured on the conv bench only (README's model figures are session 23's).
#   bash tefuse/bench/precision_steps.sh resnet      (then vit, then gemm)
# Call 4 (about 4 minutes), if TMA is still slow: ncu's warp stall reasons by source line on
# 2048x7x7->512 b16.
#   TEFUSE_TMA=1x1 ncu --set full --import-source yes -k regex:main_kernel --launch-skip 5 --launch-count 1 \
#     -o $OUT/ncu_tma12 python3 -m tefuse.bench.precision conv --precision fp16 --batch 16 --layout NHWC --shapes 12
