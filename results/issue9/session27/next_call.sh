# The first GPU calls planned for session 28 (WGMMA_NOTES "Session 27"), from the snapshot root after the
# usual setup (COMMANDS.md); results under $OUT. Load calls: move results/ aside first.
# Call 1 (about 6 minutes): the whole GPU suite at the new HEAD (185 passed at 8bdc727).
timeout 450 python3 -m pytest -m gpu tests/gpu -n 4 -q -p no:cacheprovider > $OUT/gpu_tests.log 2>&1
echo "gpu suite rc $?"; tail -2 $OUT/gpu_tests.log
# Call 2: the b16 conv bench twice, each in its own process and cache, to see cuDNN's per-process
# algorithm picks beside the same tefuse kernels (this session: 1.006x and 1.038x in-call, 1.048x
# against the median cuDNN of four processes):
#   TEFUSE_CACHE_DIR=/tmp/kcA python3 results/issue9/session25/ab_bench.py --precisions fp16 --json $OUT/ab_A.json
#   TEFUSE_CACHE_DIR=/tmp/kcB python3 results/issue9/session25/ab_bench.py --precisions fp16 --json $OUT/ab_B.json
# Then the next structural step, cluster split-K through distributed shared memory for 2048x7x7->512,
# 1024x14x14->256, 256x14x14 3x3 and 512x7x7->512 3x3 (WGMMA_NOTES "Session 27", item 1): built and
# checked on llvm first, then timed against the unsplit kernel and the second-kernel split.
