#!/usr/bin/env bash
# Session nov28g, call 6 (the last minutes of device time): the GEMM-kinds query ahead of a find (miofind/cublas.py
# query_kinds): its tests, then kinds_ab.py in fresh processes, once to fill the kernel cache, then with / without.
set -uo pipefail
R=/tmp/r; rm -rf $R
source scripts/device-env
export MIOFIND_KERNEL_CACHE=/tmp/mf-kcache MIOFIND_DB=sqlite:////tmp/u.sqlite
timeout 90 python3 -m pytest -q -m gpu -p no:cacheprovider -p no:benchmark tests/gemm/test_lt_kinds.py \
  tests/gemm/test_cublaslt_setup_gpu.py 2>&1 | tail -n 3 | tee $R/tests.txt
for side in with with without with without with without; do
  timeout 30 python3 bench/results/session-nov28g/call6_lt_kinds/kinds_ab.py $side 2>&1 | tail -n 1 | tee -a $R/ab.txt
done
cp $R/*.txt $OUT/
