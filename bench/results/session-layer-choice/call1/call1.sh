#!/usr/bin/env bash
# Session layer-choice, call 1: bench_layer_choice.py on the three models' batch-1 forward layers, FP32 (TF32 off) and
# AMP FP16 channels_last, the shipped DB, an empty user DB: each layer's FindDB candidates forced in turn as
# miofind.torch's choice, host and burst microseconds per call on the C++ path, cuDNN's on the same tensors.
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
git rev-parse HEAD > $R/commit.txt 2>/dev/null
echo "setup $(( $(date +%s) - T0 )) s"
for mc in resnet50:infer1-fp32 mobilenet_v2:infer1-fp32 resnet50:infer1-amp mobilenet_v2:infer1-amp \
          inception_v3:infer1-fp32 inception_v3:infer1-amp; do
  m=${mc%%:*}; c=${mc##*:}
  left=$(( 540 - ($(date +%s) - T0) )); [ $left -lt 30 ] && break
  MIOFIND_SYSTEM_DB=$PWD/finddb/sm_90-132.sqlite MIOFIND_DB=/tmp/user-$m-$c.sqlite timeout $left \
    python3 bench/bench_layer_choice.py --out $R/$m-$c --models $m --configs $c > $R/$m-$c.log 2>&1
  echo "$m $c rc=$? $(( $(date +%s) - T0 )) s $(grep -c '^{' $R/$m-$c.log) layers"
done
tar czf $OUT/r.tgz -C $OUT r
echo "total $(( $(date +%s) - T0 )) s"
