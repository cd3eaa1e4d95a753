#!/usr/bin/env bash
# Session nov28d, call 6 (issue 19): at the rounding TF32 solvers' final kernels and default rule: (1) the Hopper
# family's whole GPU suite (tests/implicit_gemm_hopper: the rounding solvers' claims, every config, the deep-chain test
# against float64 with the truncating build as the negative control, the shared filter rewrite's other users); (2) the
# streams-and-threads stress test, whose pool now has the rounding solvers' problems.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/t-user.sqlite
save() { tar czf $OUT/r.tgz -C /tmp r; }
el() { echo $(( $(date +%s) - T0 )); }
timeout 330 python3 -m pytest -q -m gpu -n 14 -p no:cacheprovider -p no:benchmark tests/implicit_gemm_hopper \
  > $R/tests_hopper.log 2>&1
echo "hopper tests rc=$? $(el) s: $(tail -n 1 $R/tests_hopper.log)"; grep -E "^(FAILED|ERROR)|^E  " $R/tests_hopper.log | cut -c1-300 | head -20; save
MIOFIND_STRESS_SEED=1 timeout $(( 560 - $(el) )) python3 -m pytest -q -m gpu -p no:cacheprovider -p no:benchmark \
  tests/core/test_stress_gpu.py > $R/stress.log 2>&1
echo "stress rc=$? $(el) s: $(tail -n 1 $R/stress.log)"; grep -E "^(FAILED|ERROR)|^E " $R/stress.log | cut -c1-300 | head
gzip -f $R/*.log; save
