#!/usr/bin/env bash
# Session floor, call 7 (library code of cec5079): issue 17's eager table at the current code, cuDNN benchmark mode
# against miofind.torch alternating step by step (bench_eager_pairs.py, ABBA), on the three models, training and
# inference, FP32 (TF32 off) and AMP channels_last, batch 32 and 1.
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
python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build.log 2>&1
echo "setup $(( $(date +%s) - T0 )) s: $(tail -1 $R/build.log)"
save() { tar czf $OUT/r.tgz -C $OUT r; }
export MIOFIND_SYSTEM_DB=$PWD/finddb/sm_90-132.sqlite
M=resnet50,mobilenet_v2,inception_v3
for spec in infer1-fp32,infer1-amp:150 train32-fp32,train32-amp:40 infer32-fp32,infer32-amp:60; do
  c=${spec%%:*}; p=${spec##*:}; n=${c%%-*}
  left=$(( 590 - ($(date +%s) - T0) )); [ $left -lt 30 ] && { echo "skip $c"; continue; }
  MIOFIND_DB=/tmp/u-$n.sqlite timeout $left python3 bench/bench_eager_pairs.py --out $R/$n --models $M --configs $c \
    --pairs $p > $R/$n.log 2>&1
  echo "$c rc=$? $(( $(date +%s) - T0 )) s"; grep "^| [rmi]" $R/$n/bench_eager_pairs.md; save
done
echo "total $(( $(date +%s) - T0 )) s"
