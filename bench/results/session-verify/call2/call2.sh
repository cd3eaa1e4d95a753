#!/usr/bin/env bash
# Session verify, call 2 (the machine of call 1): the GPU suite's part 2 at 3a4c885's code, then the stress test 3 more
# times alone.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
OUT=$R/part2 BENCH=0 XDIST=14 STRESS=3 timeout 540 scripts/gpu-check tests/fft tests/gemm tests/implicit_gemm \
  tests/implicit_gemm_hopper tests/winograd > $R/part2.log 2>&1
echo "part2 rc=$?"; sed -n '/== summary ==/,$p' $R/part2.log; grep -E "^(FAILED|ERROR)" $R/part2/gpu-tests.log | head
grep -a -E '^stress:|== stress' $R/part2/stress.log | cut -c1-300
gzip -f $R/part2/gpu-tests.log
tar czf $OUT/r.tgz -C $OUT r
echo "total $(( $(date +%s) - T0 )) s"
