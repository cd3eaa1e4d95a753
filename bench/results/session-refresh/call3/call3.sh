#!/usr/bin/env bash
# Session refresh, call 3: the captured FP32 training step (batch 32, TF32 off) of the three models with the shipped DB
# before (wall-timed but for the 288 FP16 NHWC N=32 problems) and after the refresh (every record device-timed;
# .refresh/new.sqlite, carried), alternating arms, empty user DBs, cuDNN benchmark mode as the reference in each run.
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
echo "setup $(( $(date +%s) - T0 )) s"
for arm in before after; do
  db=$PWD/finddb/sm_90-132.sqlite; [ $arm = after ] && db=$PWD/.refresh/new.sqlite
  MIOFIND_SYSTEM_DB=$db MIOFIND_DB=/tmp/user-$arm.sqlite timeout 240 \
    python3 bench/bench_graph_step.py --out $R/$arm --models inception_v3,mobilenet_v2,resnet50 --configs train32-fp32 \
    > $R/$arm.log 2>&1
  echo "$arm rc=$? $(( $(date +%s) - T0 )) s"; tail -4 $R/$arm/bench_graph_step.md
done
tar czf $OUT/r.tgz -C $OUT r
echo "total $(( $(date +%s) - T0 )) s"
