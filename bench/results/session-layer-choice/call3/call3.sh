#!/usr/bin/env bash
# Session layer-choice, call 3: diag.py (bench_graph_step's sequence; per forward plan: Entry, eager Entry, C++ and
# Python-fallback calls over the timed eager steps) with EAGER_TRIES 3 and 0 in alternating processes.
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
SP=$(python3 -c "import numpy,os;print(os.path.dirname(os.path.dirname(numpy.__file__)))")
env -u PYTHONDONTWRITEBYTECODE python3 -m compileall -q -j 16 $SP /tmp/site miofind solvers bench > /dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
export MIOFIND_SYSTEM_DB=$PWD/finddb/sm_90-132.sqlite
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
D=bench/results/session-layer-choice/call3/diag.py
for mc in inception_v3:infer1-fp32 mobilenet_v2:infer1-fp32 resnet50:infer1-amp; do
  m=${mc%%:*}; c=${mc##*:}
  for t in 3 0 3 0; do
    left=$(( 560 - ($(date +%s) - T0) )); [ $left -lt 40 ] && break
    n=$m-$c-t$t-$RANDOM
    MIOFIND_DB=/tmp/u-$n.sqlite timeout $left python3 $D $m $c $t $R/$n.json > $R/$n.log 2>&1
    echo "$n rc=$? $(( $(date +%s) - T0 )) s: $(grep -o '"step_ms": [0-9.]*' $R/$n.log) $(grep '^plans' $R/$n.log)"
  done
done
MIOFIND_DB=/tmp/u-ds.sqlite python3 $D inception_v3 infer1-fp32 3 $R/inception-ds-t3.json --default-stream > $R/inception-ds-t3.log 2>&1
echo "default-stream t3: $(grep -o '"step_ms": [0-9.]*' $R/inception-ds-t3.log) $(grep '^plans' $R/inception-ds-t3.log)"
tar czf $OUT/r.tgz -C $OUT r
echo "total $(( $(date +%s) - T0 )) s"
