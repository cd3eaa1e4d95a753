#!/usr/bin/env bash
# Session nov27h, call 8: call 7's ref_bwd.py again (it failed there on build_invoker's arguments, mended).
set -uo pipefail
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
MIOFIND_KERNEL_CACHE=/tmp/kc-ref timeout 120 python3 bench/results/session-nov27h/call7/ref_bwd.py > $R/ref_bwd.md 2>&1
echo "ref rc=$?"; cat $R/ref_bwd.md
