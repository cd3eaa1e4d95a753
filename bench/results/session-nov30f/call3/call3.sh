#!/usr/bin/env bash
# Session nov30f, call 3 (any sm_90): the Hopper W GPU tests touched by the 8-stage configs (cf885b2a); w_bounds.py:
# the W kernel's copies alone and its wgmma alone (a scratch copy of the kernel) on four 1x1 stride-1 layers.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
export MIOFIND_KERNEL_CACHE=/tmp/kc3 MIOFIND_DB=sqlite:////tmp/u3.sqlite CUPY_CACHE_DIR=/tmp/cupy3 MIOFIND_SYSTEM_DB=none
timeout 240 python3 -m pytest -q -m gpu -n 12 tests/implicit_gemm_hopper/test_implicit_gemm_hopper.py \
    -k "hopper_wrw_eight or hopper_wrw_config_sample or hopper_wrw_find_configs or hopper_wrw_long" \
    -p no:cacheprovider > $R/tests.txt 2>&1
echo "tests rc=$? $(el) s"; tail -2 $R/tests.txt
timeout 240 python3 bench/results/session-nov30f/call3/w_bounds.py $R/w_bounds.json > $R/w_bounds.txt 2>&1
echo "probe rc=$? $(el) s"; grep -vE "^ +Probe|^$" $R/w_bounds.txt | tail -40
gzip -f $R/*.json; tar czf $OUT/r.tgz -C /tmp r; echo "all $(el) s"
