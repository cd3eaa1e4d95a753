#!/usr/bin/env bash
# Session nov30c, call 6 (any sm_90): multicast B with the consumers' remote arrivals as CUTLASS's ClusterBarrier makes
# them (mbarrier.arrive.shared::cluster, the default .release.cta) in place of .release.cluster: test_multicast_b.py,
# then call 5's probe at the solver's grid (mc_grid.py 66).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc6 MIOFIND_DB=sqlite:////tmp/u6.sqlite CUPY_CACHE_DIR=/tmp/cupy6 MIOFIND_SYSTEM_DB=none
timeout 120 python3 bench/results/session-nov30c/call5/mc_grid.py 66 $R/mc_grid.json > $R/mc_grid.txt 2>&1
echo "mc_grid rc=$? $(el) s"; cat $R/mc_grid.txt | tail -30; save
timeout 150 python3 -m pytest -v -m gpu -n 15 -p no:cacheprovider tests/implicit_gemm_hopper/test_multicast_b.py \
  > $R/tests.log 2>&1
echo "tests rc=$? $(el) s"; grep -cE " PASSED" $R/tests.log; grep -E " FAILED| ERROR" $R/tests.log | head; tail -1 $R/tests.log
gzip -f $R/*.log; save; echo "all $(el) s"
