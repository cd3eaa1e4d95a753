#!/usr/bin/env bash
# Session nov30e, call 10 (any sm_90): ncu's L2 counters of nvjet's and our unsplit 64 x 64 W tile on 1024 -> 512 @14
# (w_l2bytes.py): first counters every sm_90 ncu has, then the L2 sectors by source unit (a second run, so that an
# unknown counter name loses only it).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
export MIOFIND_KERNEL_CACHE=/tmp/kc10 MIOFIND_DB=sqlite:////tmp/u10.sqlite CUPY_CACHE_DIR=/tmp/cupy10 MIOFIND_SYSTEM_DB=none
P=bench/results/session-nov30e/call10/w_l2bytes.py
K='regex:igemm_hopper_wrw$|nvjet'
timeout 100 ncu --clock-control none -k "$K" --csv --metrics gpu__time_duration.sum,lts__t_bytes.sum,dram__bytes_read.sum,l1tex__m_xbar2l1tex_read_bytes.sum \
  python3 $P > $R/ncu_a.csv 2> $R/ncu_a.err; echo "a rc=$? $(el) s"
timeout 100 ncu --clock-control none -k "$K" --csv --metrics lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex.sum,lts__t_requests_srcunit_tex_op_read.sum \
  python3 $P > $R/ncu_b.csv 2> $R/ncu_b.err; echo "b rc=$? $(el) s"
for f in a b; do grep -E '^"[0-9]' $R/ncu_$f.csv | awk -F'","' '{print $5" | "$(NF-2)" "$(NF-1)" "$NF}' | cut -c1-160; tail -2 $R/ncu_$f.err; done
tar czf $OUT/r.tgz -C /tmp r; echo "all $(el) s"
