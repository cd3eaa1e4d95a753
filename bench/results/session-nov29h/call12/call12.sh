#!/usr/bin/env bash
# Session nov29h, call 12 (any sm_90; an H200): the W default's padded rule narrowed from call 11's figures
# (wrw.padded_columns: larger filters, or 1x1 from 224 channels): the same run of W on PADDED_C again, and the W padded
# GPU tests.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc12 MIOFIND_DB=sqlite:////tmp/u12.sqlite CUPY_CACHE_DIR=/tmp/cupy12 MIOFIND_SPECIALIZE=sync
timeout 70 python3 bench/bench_convs.py --dtype FP16 --layout NHWC --cudnn-harness --dirs W --set padded \
  --out $R/after_padded > $R/after_padded.txt 2>&1
echo "after padded rc=$? $(el) s"; grep -E "harness, geometric mean" $R/after_padded.txt; save
unset MIOFIND_SPECIALIZE
timeout 50 python3 -m pytest -q -m gpu -n 14 -p no:cacheprovider tests/implicit_gemm_hopper/test_tma_padded.py -k wrw \
  > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; tail -1 $R/tests.log; save
