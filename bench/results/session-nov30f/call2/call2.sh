#!/usr/bin/env bash
# Session nov30f, call 2 (any sm_90): the multicast tests after call 1's case fix; ncu's L2 counters of the pairs
# (w_mc_ncu.py); then on all 23 of ResNet-50's W layers (FP16 NHWC, N = 32) the Hopper W find configs and the shipped
# DB's record config, each also at 8 stages (--vary), beside the GEMM solvers' and cuDNN's (sweep_configs.py, two passes).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
export MIOFIND_KERNEL_CACHE=/tmp/kc2 MIOFIND_DB=sqlite:////tmp/u2.sqlite CUPY_CACHE_DIR=/tmp/cupy2 MIOFIND_SYSTEM_DB=none
timeout 120 python3 -m pytest -q -m gpu -n 8 tests/implicit_gemm_hopper/test_multicast_w.py -p no:cacheprovider \
    > $R/tests.txt 2>&1
echo "tests rc=$? $(el) s"; tail -2 $R/tests.txt
K='regex:igemm_hopper_wrw$|nvjet'
timeout 100 ncu --clock-control none -k "$K" --csv --metrics gpu__time_duration.sum,lts__t_bytes.sum,dram__bytes_read.sum,l1tex__m_xbar2l1tex_read_bytes.sum \
  python3 bench/results/session-nov30f/call2/w_mc_ncu.py > $R/ncu.csv 2> $R/ncu.err; echo "ncu rc=$? $(el) s"
grep -E '^"[0-9]' $R/ncu.csv | awk -F'","' '{print $5" | "$(NF-2)" "$(NF-1)" "$NF}' | cut -c1-160; tail -2 $R/ncu.err
O=ConvImplicitGemmHopperWrw,GemmWrw1x1_stride1,GemmWrwUniversal
timeout 330 python3 bench/sweep_configs.py --dir W --layers all --where STAGES=99 --others $O \
    --db finddb/sm_90-132.sqlite --vary STAGES=8 --reps 2 --deadline 300 --json $R/sweep_st8.json > $R/sweep_st8.txt 2>&1
echo "sweep rc=$? $(el) s"; grep -E "^(precompiled|geomean|deadline)" $R/sweep_st8.txt
gzip -f $R/*.json; tar czf $OUT/r.tgz -C /tmp r; echo "all $(el) s"
