#!/usr/bin/env bash
# Session check, call 5, at the commit after 048d17a (a find's answers list equal times by solver id): the test that
# failed in call 4 on such a tie; then issue 17's AMP training steps (bench_graph_step, captured and eager, cuDNN
# benchmark mode against miofind.torch) with three system DBs in turn, each over an empty user DB: the shipped one
# (wall-timed records), call 4's copy whose FP16 NHWC N=32 problems of the three models were found again under
# device timing, and that copy with MIOFIND_TORCH_HOST_US=0 (the choice by measured time alone).
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
timeout 60 python3 -m pytest -q -m gpu tests/core/test_api_gpu.py tests/core/test_timing_gpu.py > $R/tests.log 2>&1
echo "tests rc=$?"; tail -1 $R/tests.log; grep -E "^(FAILED|ERROR)" $R/tests.log | head
timeout 150 python3 -m miofind warmup --arch sm_90 > $R/warmup.log 2>&1; tail -1 $R/warmup.log
gunzip -c bench/results/session-check/call4/r/refresh.sqlite.gz > /tmp/device_timed.sqlite
cp finddb/sm_90-132.sqlite /tmp/wall_timed.sqlite
for arm in wall device device-host0; do
  db=/tmp/wall_timed.sqlite; [ $arm != wall ] && db=/tmp/device_timed.sqlite
  host=30; [ $arm = device-host0 ] && host=0
  MIOFIND_SYSTEM_DB=$db MIOFIND_DB=/tmp/user-$arm.sqlite MIOFIND_TORCH_HOST_US=$host timeout 200 \
    python3 bench/bench_graph_step.py --out $R/$arm --models inception_v3,mobilenet_v2,resnet50 --configs train32-amp \
    > $R/$arm.log 2>&1
  echo "$arm rc=$?"; tail -3 $R/$arm/bench_graph_step.md
done
tar czf $OUT/r.tgz -C $OUT r
echo "total $(( $(date +%s) - T0 )) s"
