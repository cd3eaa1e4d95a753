#!/usr/bin/env bash
# Session nov30f, call 1 (any sm_90): the Hopper W kernel's multicast pairs (MC = 2). Their GPU tests and a sanitizer
# run (memcheck on one small case), then w_mc.py on ResNet-50's 1x1 stride-1 W layers (FP16 NHWC, N = 32).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
export MIOFIND_KERNEL_CACHE=/tmp/kc1 MIOFIND_DB=sqlite:////tmp/u1.sqlite CUPY_CACHE_DIR=/tmp/cupy1 MIOFIND_SYSTEM_DB=none
timeout 140 python3 -m pytest -q -m gpu -n 8 tests/implicit_gemm_hopper/test_multicast_w.py -p no:cacheprovider \
    > $R/tests.txt 2>&1
echo "tests rc=$? $(el) s"; tail -3 $R/tests.txt
CFG='{"BM": 64, "BN": 64, "WGS": 1, "STAGES": 4, "SPLITK": 1, "CLUSTER": 1, "WSPEC": 1, "TMA": 1, "ST16": 0, "RG": 4, "MC": 2}'
for tool in memcheck; do
    timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 python3 bench/results/session-nov30f/call1/mc_one.py \
        "$CFG" > $R/sanitize_$tool.txt 2>&1
    echo "sanitizer $tool rc=$? $(el) s"; tail -2 $R/sanitize_$tool.txt
done
timeout 300 python3 bench/results/session-nov30f/call1/w_mc.py $R/w_mc.json > $R/w_mc.txt 2>&1
echo "probe rc=$? $(el) s"; grep -E "^(r50|precompiled|geomean|  best|  paired)" $R/w_mc.txt
gzip -f $R/*.json; tar czf $OUT/r.tgz -C /tmp r; echo "all $(el) s"
