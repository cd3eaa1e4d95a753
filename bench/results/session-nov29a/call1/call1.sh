#!/usr/bin/env bash
# Session nov29a, call 1 (any sm_90): session nov28h's prepared items 2 and 3.
# 1. the settle mend's GPU tests (tests/gemm: settle queries and waits for every GEMM kind; the first-runs test calls
#    settle()), logs in r/tests/; 2. session nov28f's call_cold.sh (bench_cold with its empty-caches rows on an empty
#    CUDA JIT cache), which writes r/ afresh.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; T=/tmp/t; rm -rf $T; mkdir -p $T
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
MIOFIND_KERNEL_CACHE=/tmp/kc timeout 200 python3 -m pytest -q -m gpu -n 8 tests/gemm > $T/tests_gemm.log 2>&1
echo "tests rc=$? $(el) s"; tail -3 $T/tests_gemm.log
MIOFIND_KERNEL_CACHE=/tmp/kc2 timeout 120 python3 -m pytest -q -m gpu tests/gemm -rA -k "settle or first_runs" \
  > $T/tests_settle.log 2>&1
echo "settle rc=$? $(el) s"; grep -E "^(PASSED|FAILED)|passed|failed" $T/tests_settle.log | tail -12
bash bench/results/session-nov28f/prepared/call_cold.sh
cp -r $T /tmp/r/tests; tar czf $OUT/r.tgz -C /tmp r
echo "all $(el) s"
