#!/usr/bin/env bash
# Session nov29h, call 11 (any sm_90; an H200): padded copy-engine W columns (each tap's C rounded up to 64-wide column
# blocks, dw written for a tap's first C; the kernel's W_PAD).
# 1. GPU tests: test_tma_padded.py's W cases (unsplit, split, cluster, both, 16-byte stores, the default), the W TMA
#    tests of test_tma.py; compute-sanitizer on the padded tiny problems (W).
# 2. Same run, W, FP16 NHWC N = 32: PADDED_C without the padded configs (--no-padded), then with; NON_RESNET with.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc11 MIOFIND_DB=sqlite:////tmp/u11.sqlite CUPY_CACHE_DIR=/tmp/cupy11
timeout 110 python3 -m pytest -q -m gpu -n 14 -p no:cacheprovider tests/implicit_gemm_hopper/test_tma_padded.py \
  tests/implicit_gemm_hopper/test_tma.py -k "wrw" > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -E "^(FAILED|ERROR)" $R/tests.log | head; tail -1 $R/tests.log; save
OUT_SAVE=$OUT; OUT=$R/sanitize SANITIZE_TIMEOUT=40 timeout 70 scripts/sanitize --solvers ConvImplicitGemmHopperWrw \
  --every --problems nhwc_pad_walk,nhwc_pad_1x1 > $R/sanitize.txt 2>&1; echo "sanitize rc=$? $(el) s"
tail -3 $R/sanitize.txt; OUT=$OUT_SAVE; save
export MIOFIND_SPECIALIZE=sync
for run in "before padded --no-padded" "after padded" "after nonresnet"; do
  set -- $run
  left=$(( 290 - $(el) )); [ $left -lt 30 ] && { echo "skip $run: $left s left"; continue; }
  timeout $left python3 bench/bench_convs.py --dtype FP16 --layout NHWC --cudnn-harness --dirs W --set $2 ${3:-} \
    --out $R/$1_$2 > $R/$1_$2.txt 2>&1
  echo "$1 $2 rc=$? $(el) s"; grep -E "harness, geometric mean" $R/$1_$2.txt; save
done
