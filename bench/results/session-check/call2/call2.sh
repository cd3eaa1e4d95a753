#!/usr/bin/env bash
# Session check, call 2 (call 1's machine, set up there): the GPU suite's part 2 at dcf6047.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site
[ -d /tmp/site ] || python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
if [ ! -f miofind/_native.abi3.so ]; then
  inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
  gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
OUT=$R/part2 BENCH=0 XDIST=14 STRESS=0 timeout 560 scripts/gpu-check tests/fft tests/gemm tests/implicit_gemm \
  tests/implicit_gemm_hopper tests/winograd > $R/part2.log 2>&1
echo "part2 rc=$?"; sed -n '/== summary ==/,$p' $R/part2.log; grep -E "^(FAILED|ERROR)" $R/part2/gpu-tests.log | head
gzip -f $R/part2/gpu-tests.log
tar czf $OUT/r.tgz -C $OUT r
echo "total $(( $(date +%s) - T0 )) s"
