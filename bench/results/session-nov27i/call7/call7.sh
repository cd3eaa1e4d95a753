#!/usr/bin/env bash
# Session nov27i, call 7 (issue 18): bench_cold with the float64 reference's own F, B and channels-last W kernels and their estimates:
# `miofind warmup` alone, then bench/bench_cold.py with the warmed kernel cache as the installed one.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m compileall -q -j 16 /tmp/site miofind solvers bench > /dev/null 2>&1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
pack() { tar czf $OUT/r.tgz -C $OUT r; }
MIOFIND_KERNEL_CACHE=/tmp/warm-kc CUPY_CACHE_DIR=/tmp/warm-cupy timeout 220 python3 -m miofind warmup --arch sm_90 > $R/warmup.log 2>&1
echo "warmup rc=$? $(( $(date +%s) - T0 )) s"; grep -v "resource_tracker\|warnings.warn" $R/warmup.log | tail -2
left=$(( 575 - ($(date +%s) - T0) ))
timeout $left python3 bench/bench_cold.py --out $R/cold --installed-cache /tmp/warm-kc --installed-cupy-cache /tmp/warm-cupy \
  --timeout 90 > $R/cold.log 2>&1
echo "cold rc=$? $(( $(date +%s) - T0 )) s"; sed -n '/^\*\*The installed/p;/^| layer | type | dir | torch/,/^$/p' $R/cold/bench_cold.md
pack
