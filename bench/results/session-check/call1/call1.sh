#!/usr/bin/env bash
# Session check, call 1: the GPU suite's part 1 at dcf6047 (launch.py's cuLaunchKernel, the native launcher's
# cuLaunchKernel address and cuLaunchKernelEx from cumodule.libcuda(); find's workspace check as one branch), with
# the streams-and-threads stress test once alone.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
SP=$(python3 -c "import numpy,os;print(os.path.dirname(os.path.dirname(numpy.__file__)))")
env -u PYTHONDONTWRITEBYTECODE python3 -m compileall -q -j 16 $SP /tmp/site miofind solvers bench > /dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache PYTHONPATH=$PWD:/tmp/site
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
git log -1 --format=%h > $R/commit.txt 2>/dev/null
OUT=$R/part1 BENCH=0 XDIST=14 STRESS=1 timeout 420 scripts/gpu-check tests/core tests/cudnn tests/depthwise tests/direct \
  tests/cli tests/tuning tests/torch > $R/part1.log 2>&1
echo "part1 rc=$?"; sed -n '/== summary ==/,$p' $R/part1.log; grep -E "^(FAILED|ERROR)" $R/part1/gpu-tests.log | head
grep -a -E '^stress:|== stress' $R/part1/stress.log | cut -c1-300
gzip -f $R/part1/gpu-tests.log
tar czf $OUT/r.tgz -C $OUT r
echo "total $(( $(date +%s) - T0 )) s"
