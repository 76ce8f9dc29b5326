# Session 27: the b16 conv bench with the epilogue's parameter loads issued first (default, hoist.raise_lets)
# against after the mainloop (TEFUSE_LATE_PARAMS=1), each form in its own process and kernel cache; then
# bf16 with the default. Run from the snapshot root after the usual setup (COMMANDS.md); results under $OUT.
# usage: bash params_call.sh LIMIT_S
R=../results/issue9/session25/ab_bench.py
[ -f $R ] || R=results/issue9/session25/ab_bench.py
L=${1:-140}
ab() {  # name env precision
  env $2 TEFUSE_CACHE_DIR=/tmp/kc_$1 timeout $L python3 $R --precisions $3 --json $OUT/params_$1.json > $OUT/params_$1.log 2>&1
  echo "== $1 rc $?"; tail -1 $OUT/params_$1.log
}
ab early_fp16 TEFUSE_LATE_PARAMS=0 fp16
ab late_fp16 TEFUSE_LATE_PARAMS=1 fp16
ab early_bf16 TEFUSE_LATE_PARAMS=0 bf16
