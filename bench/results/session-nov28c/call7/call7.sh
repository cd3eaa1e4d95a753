#!/usr/bin/env bash
# Session nov28c, call 7: compute-sanitizer racecheck and memcheck on the two swap solvers over every tiny problem they
# claim (bench/sanitize_driver.py --every: the forward on nhwc_tma_walk, backward data on nhwc_swap_b_walk; both walk
# several tiles per persistent block), the two tools in parallel.
set -uo pipefail
mkdir -p $OUT/san
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
OUT=$OUT/san SANITIZE_TIMEOUT=150 timeout 190 scripts/sanitize --solvers ConvImplicitGemmHopperFwdSwap,ConvImplicitGemmHopperBwdSwap --every
echo "sanitize rc=$?"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/san/device.txt
gzip -f $OUT/san/*.log
