#!/usr/bin/env bash
# Session nov29f, call 4 (any sm_90; an H200): issue 19's "64-bit indexing at the boundaries" for the Hopper family on
# the GPU -- tests/implicit_gemm_hopper/test_index_boundaries.py (new): F, the copy-engine-store F, B and W on FP16 NHWC
# 3x3 64 -> 64 problems at 256 x 256 with n x 2^22-element activations, n = 511 (32-bit offsets) and 513 (64-bit; run 2 had 512, whose last index still fits 32 bits), at
# the default config (copy engine) and with cp.async loads; every output element written, 74 sampled elements against
# a float64 reference. 2 xdist workers (up to about 42 GB of GPU memory a case; with 4 workers, 10 of 14 cases ran out of
# memory in the first run of this call, out/run1/).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy-cache MIOFIND_KERNEL_CACHE=/tmp/kc MIOFIND_BIG_TESTS=1
MIOFIND_DB=sqlite:////tmp/u4.sqlite timeout 500 python3 -m pytest -m gpu tests/implicit_gemm_hopper/test_index_boundaries.py \
  -v -p no:cacheprovider -rfEs -n 2 --durations=20 > $R/boundaries.log 2>&1
echo "boundaries rc=$? $(el) s"; grep -E "PASSED|FAILED|ERROR" $R/boundaries.log | sed -E 's/^\[gw[0-9]+\] \[ *[0-9]+%\] //' | cut -c1-200
tail -1 $R/boundaries.log; save; echo "all $(el) s"
