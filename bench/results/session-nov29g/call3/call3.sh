#!/usr/bin/env bash
# Session nov29g call 3: the stream-K kernel with SK_DP (whole-tile waves first) and the A/B of sk_ab.py; the
# stream-K GPU tests again (the kernel's loops changed for SK_DP).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export CUPY_CACHE_DIR=/tmp/cupy-cache MIOFIND_KERNEL_CACHE=/tmp/kc MIOFIND_DB=sqlite:////tmp/u.sqlite
timeout 300 python3 bench/results/session-nov29g/call3/sk_ab.py $R/sk_ab.json > $R/sk_ab.txt 2>&1
echo "sk_ab rc=$? $(el) s"; cat $R/sk_ab.txt | cut -c1-200; save
timeout 150 python3 -m pytest -m gpu -p no:cacheprovider -rfEs -n 8 tests/implicit_gemm_hopper/test_stream_k.py \
  > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -E "^(FAILED|ERROR)" $R/tests.log | head; tail -1 $R/tests.log; save
