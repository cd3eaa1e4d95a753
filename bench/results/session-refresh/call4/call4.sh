#!/usr/bin/env bash
# Session refresh, call 4: batch-1 inference (FP32 and AMP channels_last; captured forward and eager in the same rounds,
# bench_graph_step.py) of the three models with the shipped DB before the refresh (.refresh/old.sqlite, carried: the
# N=1 records wall-timed) and after it (finddb/sm_90-132.sqlite of the working tree: every record device-timed),
# alternating arms, empty user DBs, cuDNN benchmark mode as the reference in each run. At N=1 the refresh moved the
# records the most (cuDNN's to 0.48-0.51 of their wall-timed times, the cuBLASLt 1x1 GEMMs' to 0.28-0.32), so this
# is where a device-timed pick could cost a host-bound framework step.
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
for round in 1 2; do
  for arm in after before; do
    db=$PWD/finddb/sm_90-132.sqlite; [ $arm = before ] && db=$PWD/.refresh/old.sqlite
    MIOFIND_SYSTEM_DB=$db MIOFIND_DB=/tmp/user-$arm-$round.sqlite timeout 150 \
      python3 bench/bench_graph_step.py --out $R/$arm-$round --models inception_v3,mobilenet_v2,resnet50 \
      --configs infer1-fp32,infer1-amp > $R/$arm-$round.log 2>&1
    echo "$arm-$round rc=$? $(( $(date +%s) - T0 )) s"; grep "| infer" $R/$arm-$round/bench_graph_step.md
  done
done
tar czf $OUT/r.tgz -C $OUT r
echo "total $(( $(date +%s) - T0 )) s"
