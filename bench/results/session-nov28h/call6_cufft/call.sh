#!/usr/bin/env bash
# Session nov28h, call 6: whether cuFFT's plan-making cost for a new transform size (117-176 ms for the FFT candidate
# of a process's first find of a size in call 5, 3-12 ms in the next process on the machine) persists through
# CUDA's JIT cache (CUDA_CACHE_PATH), and what it is keyed by. Any sm_90 device.
# Usage (repo root): bash bench/results/session-nov28h/call6_cufft/call.sh
set -uo pipefail
R=/tmp/r; rm -rf $R
source scripts/device-env
p() { echo "# $*" | tee -a $R/probe.txt; timeout 60 python3 bench/cufft_plan_probe.py "$@" 2>&1 | tee -a $R/probe.txt; }
ls -la ~/.nv 2>&1 | head -5 > $R/nv_before.txt; echo "CUDA_CACHE_PATH=${CUDA_CACHE_PATH:-unset} CUDA_CACHE_DISABLE=${CUDA_CACHE_DISABLE:-unset}" >> $R/nv_before.txt
export CUDA_CACHE_PATH=/tmp/jc1
p 24x40:64 24x40:64 24x40:100
p 24x40:64
p 24x48:64 40x24:64 20x28:64 24x40:64
p 22x34:64 34x22:64 17:512 34:512
CUDA_CACHE_PATH=/tmp/jc2 p 24x40:64 22x34:64
CUDA_CACHE_DISABLE=1 p 24x40:64 24x48:64
du -sh /tmp/jc1 /tmp/jc2 2>&1 | tee -a $R/probe.txt; find /tmp/jc1 -type f | head -5 >> $R/probe.txt
tar czf $OUT/r.tgz -C /tmp r
