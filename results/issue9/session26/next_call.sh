# The first GPU calls planned for session 27 (WGMMA_NOTES "Session 26"), from the snapshot root after the
# usual setup (COMMANDS.md); results under $OUT. Load calls: move results/ aside first.
# Call 1 (about 6 minutes): the whole GPU suite. clamp_rows (padded rows wrapped, a5d1390) has run only the
# conv bench on a GPU: its GPU tests were cut at 79% in the clamped-to-last-row form.
timeout 450 python3 -m pytest -m gpu tests/gpu -n 4 -q -p no:cacheprovider > $OUT/gpu_tests.log 2>&1
echo "gpu suite rc $?"; tail -2 $OUT/gpu_tests.log
# Call 2: the models with clamp_rows (ViT's 197-token and ResNet's 7x7 GEMMs have ragged M), one a call:
#   bash tefuse/bench/precision_steps.sh resnet      (then vit)
# Call 3: the conv bench with it, fp16 and bf16 at b16 and b1, in one process each (ab_bench.py):
#   TEFUSE_CACHE_DIR=/tmp/kc16 python3 results/issue9/session25/ab_bench.py --precisions fp16 bf16 --json $OUT/ab_b16.json
#   TEFUSE_CACHE_DIR=/tmp/kc1 python3 results/issue9/session25/ab_bench.py --precisions fp16 bf16 --batch 1 --json $OUT/ab_b1.json
