#!/usr/bin/env bash
# Session nov29h, call 3 (any sm_90; an H200): padded copy-engine K tiles for backward data too (dy's channels
# K % 64 != 0; the forward kernel's TAP_K through each stride phase's forward view), the default where
# padded_default holds for the phases' view.
# 1. GPU tests: test_tma_padded.py (F and B), test_tma.py's backward-data copy-engine tests.
# 2. bench/bench_kernel_time.py --set padded --dirs F,B: the cp.async default (ours), the padded copy-engine configs
#    (the default where padded, the find's alternates, and the persistent tiles: ptma; non-persistent: tma), the
#    copy-engine-store forward (tstore) and every cuDNN plan, each verified, timed four ways; FP16 NHWC N = 32.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc3 MIOFIND_DB=sqlite:////tmp/u3.sqlite CUPY_CACHE_DIR=/tmp/cupy3
timeout 200 python3 -m pytest -q -m gpu -n 12 -p no:cacheprovider tests/implicit_gemm_hopper/test_tma_padded.py \
  tests/implicit_gemm_hopper/test_tma.py -k "padded or bwd" > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; tail -3 $R/tests.log; save
left=$(( 570 - $(el) ))
timeout $left python3 bench/bench_kernel_time.py --set padded --dirs F,B --dtypes FP16 --find-configs --tstore \
  --cp-async-default --tma --persist --iters 40 --deadline $(( left - 25 )) --json $R/padded.json > $R/padded.txt 2>&1
echo "padded rc=$? $(el) s"; tail -22 $R/padded.txt
save
