#!/usr/bin/env bash
# Session nov28c, call 6: the streams-and-threads stress test with the swap solvers in its plan, twice, and the whole
# Hopper family's GPU tests (tests/implicit_gemm_hopper) at the session's final kernels.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/t-user.sqlite
save() { tar czf $OUT/r.tgz -C /tmp r; }
el() { echo $(( $(date +%s) - T0 )); }
for i in 1 2; do
  MIOFIND_STRESS_SEED=$i timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -p no:benchmark tests/core/test_stress_gpu.py \
    > $R/stress_$i.log 2>&1
  echo "stress seed $i rc=$? $(el) s: $(tail -n 1 $R/stress_$i.log)"; grep -E "^(FAILED|ERROR)|^E " $R/stress_$i.log | cut -c1-300 | head; save
done
timeout $(( 570 - $(el) )) python3 -m pytest -q -m gpu -n 14 -p no:cacheprovider -p no:benchmark tests/implicit_gemm_hopper \
  > $R/tests_hopper.log 2>&1
echo "hopper tests rc=$? $(el) s: $(tail -n 1 $R/tests_hopper.log)"; grep -E "^(FAILED|ERROR)" $R/tests_hopper.log | cut -c1-300 | head -20
gzip -f $R/*.log; save
