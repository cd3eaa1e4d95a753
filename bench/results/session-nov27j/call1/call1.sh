#!/usr/bin/env bash
# Session nov27j, call 1: (1) lt_algos.py: every cuBLASLt algorithm the heuristic returns (up to 16) for the GEMM
# solvers of ResNet-50's 1x1 stride-1 layers at N=32, FP16 NHWC and FP32 NCHW, F/B/W, verified and timed beside
# cuDNN's plans on the same buffers; (2) session nov27i's prepared channels-first W reference (wrw_cf.patch) timed
# against naive_conv_wrw (its ref_time_wcf.py), the patch applied on this copy only after (1).
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > $R/device.txt
pack() { tar czf $OUT/r.tgz -C $OUT r; }
MIOFIND_KERNEL_CACHE=/tmp/kc1 timeout 330 python3 bench/results/session-nov27j/call1/lt_algos.py $R/lt_algos.json 300 > $R/lt_algos.log 2>&1
echo "lt rc=$? $(( $(date +%s) - T0 )) s"; grep -v "^ " $R/lt_algos.log | tail -90
pack
patch -s -p1 < bench/results/session-nov27i/prepared/wrw_cf.patch && echo "patch applied"
MIOFIND_KERNEL_CACHE=/tmp/kc-ref timeout 150 python3 bench/results/session-nov27i/prepared/ref_time_wcf.py > $R/ref_time_wcf.md 2>&1
echo "ref rc=$? $(( $(date +%s) - T0 )) s"; cat $R/ref_time_wcf.md | tail -40
pack
