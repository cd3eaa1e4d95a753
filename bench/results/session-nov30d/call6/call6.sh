#!/usr/bin/env bash
# Session nov30d, call 6 (any sm_90): cs_noreduce.py on commit 3441e71f's tree (cs_tree/, not committed: git archive
# 3441e71f miofind solvers kernels_src tests/shapes.py bench/kernel_timing.py bench/bench_kernel_time.py, with
# reduce_cluster under #ifndef CS_NOREDUCE).
set -uo pipefail
T0=$(date +%s)
R=/tmp/r; rm -rf $R
source scripts/device-env
el() { echo $(( $(date +%s) - T0 )); }
export MIOFIND_KERNEL_CACHE=/tmp/kc6 MIOFIND_DB=sqlite:////tmp/u6.sqlite CUPY_CACHE_DIR=/tmp/cupy6 MIOFIND_SYSTEM_DB=none
export PYTHONPATH=$PWD/cs_tree:/tmp/site
timeout 150 python3 bench/results/session-nov30d/call6/cs_noreduce.py > $R/cs_noreduce.txt 2>&1
echo "probe rc=$? $(el) s"; cat $R/cs_noreduce.txt
tar czf $OUT/r.tgz -C /tmp r; echo "all $(el) s"
