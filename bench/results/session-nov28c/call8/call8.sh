#!/usr/bin/env bash
# Session nov28c, call 8: after the TF32 and swap backward data share one filter-rewrite kernel
# (kernels_src/implicit_gemm_hopper_flip.cu): both solvers' backward-data GPU tests.
set -uo pipefail
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/t-user.sqlite
timeout 150 python3 -m pytest -q -m gpu -n 12 -p no:cacheprovider -p no:benchmark tests/implicit_gemm_hopper/test_swap.py \
  tests/implicit_gemm_hopper/test_tf32.py -k "bwd or Bwd" > $R/tests_bwd.log 2>&1
echo "bwd tests rc=$?: $(tail -n 1 $R/tests_bwd.log)"; grep -E "^(FAILED|ERROR)" $R/tests_bwd.log | cut -c1-300 | head
gzip -f $R/*.log; tar czf $OUT/r.tgz -C /tmp r
