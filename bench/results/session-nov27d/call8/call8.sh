#!/usr/bin/env bash
# Session nov27d, call 8: issue 17's AMP rows at the final code (the native cuDNN charge of 8 us, NativePlans), as
# session-floor's call 7 measured them: cuDNN benchmark mode against miofind.torch alternating step by step
# (bench_eager_pairs.py, ABBA), the three models, AMP channels_last, batch-1 inference then batch-32 training.
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
for spec in infer1-amp:150 train32-amp:40; do
  c=${spec%%:*}; p=${spec##*:}; n=${c%%-*}
  left=$(( 560 - ($(date +%s) - T0) )); [ $left -lt 30 ] && { echo "skip $c"; continue; }
  MIOFIND_DB=/tmp/u-$n.sqlite timeout $left python3 bench/bench_eager_pairs.py --out $R/$n --models $M --configs $c \
    --pairs $p 2>&1 | grep -v "leaked\|nanobind\|skipped remainder\|refleaks" > $R/$n.log
  echo "$c rc=$? $(( $(date +%s) - T0 )) s"; grep "^| [rmi]" $R/$n/bench_eager_pairs.md; save
done
echo "total $(( $(date +%s) - T0 )) s"
