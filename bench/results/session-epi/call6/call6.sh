#!/usr/bin/env bash
# Session epi, call 6: the GPU suite's part 2 (FFT, GEMM, implicit GEMM, Hopper, Winograd) at the session's code and
# shipped DB (find configs of the Hopper F and W solvers, the re-measured Hopper records).
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
unset PYTHONDONTWRITEBYTECODE
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
save() { tar czf $OUT/r.tgz -C $OUT r; }
left=$(( 585 - ($(date +%s) - T0) ))
OUT=$R/part2 BENCH=0 XDIST=14 STRESS=1 timeout $left scripts/gpu-check tests/fft tests/gemm tests/implicit_gemm \
  tests/implicit_gemm_hopper tests/winograd > $R/part2.log 2>&1
echo "part2 rc=$? $(( $(date +%s) - T0 )) s"; tail -6 $R/part2.log | cut -c1-300
save
