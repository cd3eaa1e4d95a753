#!/usr/bin/env bash
# Session check, call 6: the timing test mended after call 5; then the eager AMP training steps (bench_models.py,
# cuDNN benchmark mode against miofind.torch in alternating rounds in one process) with the shipped, wall-timed system
# DB and with call 4's device-timed copy, in alternating processes (wall, device, wall, device), each over an empty
# user DB: call 5's eager figures moved with the host's noise (cuDNN's own eager Inception-v3 step 37-49 ms between
# its processes).
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
SP=$(python3 -c "import numpy,os;print(os.path.dirname(os.path.dirname(numpy.__file__)))")
env -u PYTHONDONTWRITEBYTECODE python3 -m compileall -q -j 16 $SP /tmp/site miofind solvers bench > /dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
timeout 60 python3 -m pytest -q -m gpu tests/core/test_timing_gpu.py > $R/tests.log 2>&1
echo "tests rc=$?"; tail -1 $R/tests.log; grep -E "^(FAILED|ERROR)" $R/tests.log | head
timeout 150 python3 -m miofind warmup --arch sm_90 > $R/warmup.log 2>&1; tail -1 $R/warmup.log
gunzip -c bench/results/session-check/call4/r/refresh.sqlite.gz > /tmp/device_timed.sqlite
cp finddb/sm_90-132.sqlite /tmp/wall_timed.sqlite
for arm in wall1 device1 wall2 device2; do
  db=/tmp/wall_timed.sqlite; case $arm in device*) db=/tmp/device_timed.sqlite;; esac
  MIOFIND_SYSTEM_DB=$db MIOFIND_DB=/tmp/user-$arm.sqlite timeout 100 python3 bench/bench_models.py --out $R/$arm \
    --models inception_v3,resnet50 --configs train32-amp --skip-first --steps 0 --iters 15 --rounds 3 \
    > $R/$arm.log 2>&1
  echo "$arm rc=$?"; grep -E "^\| (inception_v3|resnet50)" $R/$arm/bench_models.md | cut -c1-160
done
tar czf $OUT/r.tgz -C $OUT r
echo "total $(( $(date +%s) - T0 )) s"
