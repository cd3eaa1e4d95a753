#!/usr/bin/env bash
# Session nov29h, call 1 (any sm_90; an H200): the Hopper forward's padded copy-engine K tiles (C % 64 != 0).
# 1. GPU tests: tests/implicit_gemm_hopper/test_tma_padded.py, the copy-engine-store forward's tests and its claims
#    (now every 16-bit case the forward takes), against the float64 reference with poisoned outputs.
# 2. bench/bench_kernel_time.py --set padded: 30 real layers with C % 64 != 0 (Inception-v3, MobileNetV2, DenseNet-121;
#    N=32 FP16 NHWC F): the default (cp.async loads), the padded persistent copy-engine alternates (ptma), the
#    copy-engine-store forward (tstore) and every cuDNN plan, each verified, timed four ways.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc1 MIOFIND_DB=sqlite:////tmp/u1.sqlite CUPY_CACHE_DIR=/tmp/cupy1
timeout 230 python3 -m pytest -q -m gpu -n 12 -p no:cacheprovider tests/implicit_gemm_hopper/test_tma_padded.py \
  tests/implicit_gemm_hopper/test_tma_store.py tests/implicit_gemm_hopper/test_implicit_gemm_hopper.py \
  -k "padded or TmaStore or tma_store" > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; tail -3 $R/tests.log; save
left=$(( 560 - $(el) ))
timeout $left python3 bench/bench_kernel_time.py --set padded --dirs F --dtypes FP16 --find-configs --tstore \
  --iters 40 --deadline $(( left - 20 )) --json $R/padded.json > $R/padded.txt 2>&1
echo "padded rc=$? $(el) s"; tail -12 $R/padded.txt
save
