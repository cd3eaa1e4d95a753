#!/usr/bin/env bash
# Session nov28d, call 8 (issue 19): after the review's refactor (the streamed kernels' pixel helpers in one header, one
# invoker factory and one stride-1 view for the two backward-data solvers built on a forward kernel): the GPU tests of
# the swapped-operand and the rounding TF32 solvers, whose kernel sources and solutions it touched.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/t-user.sqlite
save() { tar czf $OUT/r.tgz -C /tmp r; }
el() { echo $(( $(date +%s) - T0 )); }
timeout 170 python3 -m pytest -q -m gpu -n 14 -p no:cacheprovider -p no:benchmark tests/implicit_gemm_hopper/test_tf32_rn.py \
  tests/implicit_gemm_hopper/test_swap.py > $R/tests.log 2>&1
echo "tests rc=$? $(el) s: $(tail -n 1 $R/tests.log)"; grep -E "^(FAILED|ERROR)|^E  " $R/tests.log | cut -c1-300 | head -20
gzip -f $R/*.log; save
