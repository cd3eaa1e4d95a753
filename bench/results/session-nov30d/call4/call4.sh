#!/usr/bin/env bash
# Session nov30d, call 4 (any sm_90): the Hopper family's whole GPU suite again (tests/implicit_gemm_hopper), with
# room to finish: call 3's run stopped at its 330 s limit at 81% with no failure.
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc4 MIOFIND_DB=sqlite:////tmp/u4.sqlite CUPY_CACHE_DIR=/tmp/cupy4 MIOFIND_SYSTEM_DB=none
timeout 560 python3 -m pytest -q -m gpu -n 16 -p no:cacheprovider tests/implicit_gemm_hopper > $R/suite.log 2>&1
echo "suite rc=$? $(el) s"; grep -E " FAILED| ERROR|^FAILED|^ERROR" $R/suite.log | head; tail -1 $R/suite.log
gzip -f $R/*.log; save; echo "all $(el) s"
