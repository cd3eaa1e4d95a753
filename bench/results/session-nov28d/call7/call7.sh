#!/usr/bin/env bash
# Session nov28d, call 7 (issue 19): call 6's family suite ran out of its 330 s at 441 passed (91%, no failure), so the
# files this session changed run again on their own: the rounding solvers' tests (the deep-chain test among them) and
# the other users of the shared filter rewrite (the truncating TF32 backward data, the swapped-operand one).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/t-user.sqlite
save() { tar czf $OUT/r.tgz -C /tmp r; }
el() { echo $(( $(date +%s) - T0 )); }
timeout 250 python3 -m pytest -q -m gpu -n 14 -p no:cacheprovider -p no:benchmark -rA tests/implicit_gemm_hopper/test_tf32_rn.py \
  tests/implicit_gemm_hopper/test_tf32.py tests/implicit_gemm_hopper/test_swap.py > $R/tests.log 2>&1
echo "tests rc=$? $(el) s: $(tail -n 1 $R/tests.log)"; grep -E "^(FAILED|ERROR)|^E  |chain" $R/tests.log | cut -c1-300 | head -20
gzip -f $R/*.log; save
