#!/usr/bin/env bash
# Session nov30d, call 3 (any sm_90), at the final kernel code (the cluster split reverted; backward data's 192-wide
# tiles kept): the Hopper family's whole GPU suite (tests/implicit_gemm_hopper, the NCHW backward data's 192-wide twins
# new), miofind.torch's C++ path of the Hopper recipes (a backward-data 192-wide recipe new), then the same-run
# side-by-side of backward data, FP16 PADDED_C (bench_convs --cudnn-harness, no system DB).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
save() { tar czf $OUT/r.tgz -C /tmp r; }
export MIOFIND_KERNEL_CACHE=/tmp/kc3 MIOFIND_DB=sqlite:////tmp/u3.sqlite CUPY_CACHE_DIR=/tmp/cupy3 MIOFIND_SYSTEM_DB=none
timeout 330 python3 -m pytest -q -m gpu -n 15 -p no:cacheprovider tests/implicit_gemm_hopper > $R/suite.log 2>&1
echo "suite rc=$? $(el) s"; grep -E " FAILED| ERROR" $R/suite.log | head; tail -1 $R/suite.log; save
timeout 120 python3 -m pytest -q -m gpu -p no:cacheprovider tests/torch/test_fast.py -k "hopper_tensor_map" \
  > $R/cpp.log 2>&1
echo "cpp rc=$? $(el) s"; grep -E " FAILED| ERROR" $R/cpp.log | head; tail -1 $R/cpp.log; save
export MIOFIND_SPECIALIZE=sync
left=$(( 575 - $(el) )); [ $left -gt 60 ] && {
  timeout $left python3 bench/bench_convs.py --dtype FP16 --layout NHWC --cudnn-harness --dirs B --set padded \
    --out $R/samerun > $R/samerun_B_FP16_padded.txt 2>&1
  echo "bench B padded rc=$? $(el) s"; grep -E "harness, geometric mean" $R/samerun_B_FP16_padded.txt; }
gzip -f $R/*.log 2>/dev/null; save; echo "all $(el) s"
