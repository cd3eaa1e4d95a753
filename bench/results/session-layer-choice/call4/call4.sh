#!/usr/bin/env bash
# Session layer-choice, call 4: with the eager choice and the stream re-pin of C++ plans (change.patch), and
# bench_graph_step waiting for the C++ extension's build: the torch GPU tests; call 3's diag.py with EAGER_TRIES 3
# and 0 alternating (per plan: C++ and fallback calls); bench_graph_step batch-1 inference with the change ("after")
# and without it ("before": change.patch reversed, the same bench scripts).
set -uo pipefail
T0=$(date +%s)
R=$OUT/r; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
SP=$(python3 -c "import numpy,os;print(os.path.dirname(os.path.dirname(numpy.__file__)))")
env -u PYTHONDONTWRITEBYTECODE python3 -m compileall -q -j 16 $SP /tmp/site miofind solvers bench > /dev/null 2>&1
unset PYTHONDONTWRITEBYTECODE
export PYTHONUNBUFFERED=1 MIOFIND_KERNEL_CACHE=/tmp/mf-kcache
inc=$(python3 -c "import sysconfig;print(sysconfig.get_paths()['include'])")
gcc -O2 -shared -fPIC -I$inc miofind/_native.c -o miofind/_native.abi3.so
rm -rf /tmp/before && cp -r $PWD /tmp/before && (cd /tmp/before && patch -s -R -p1 < bench/results/session-layer-choice/call4/change.patch) \
  && echo "before tree: $(grep -c 'def _repin' /tmp/before/miofind/torch/functional.py) _repin"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
PYTHONPATH=$PWD:/tmp/site python3 -c "from miofind.torch import _fast; print(_fast.build())"   # as miofind warmup does
echo "setup $(( $(date +%s) - T0 )) s"
PYTHONPATH=$PWD:/tmp/site timeout 200 python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider tests/torch/test_fast.py \
  tests/torch/test_torch_gpu.py > $R/tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - T0 )) s: $(tail -1 $R/tests.log)"
D=bench/results/session-layer-choice/call3/diag.py
for mc in inception_v3:infer1-fp32 mobilenet_v2:infer1-fp32 resnet50:infer1-amp mobilenet_v2:infer1-amp; do
  m=${mc%%:*}; c=${mc##*:}
  for t in 3 0 3 0; do
    n=$m-$c-t$t-$RANDOM
    PYTHONPATH=$PWD:/tmp/site MIOFIND_SYSTEM_DB=$PWD/finddb/sm_90-132.sqlite MIOFIND_DB=/tmp/u-$n.sqlite timeout 60 \
      python3 $D $m $c $t $R/$n.json > $R/$n.log 2>&1
    echo "$n rc=$? $(( $(date +%s) - T0 )) s: $(grep -o '"step_ms": [0-9.]*' $R/$n.log) $(grep '^plans' $R/$n.log)"
  done
done
for run in after before; do
  left=$(( 580 - ($(date +%s) - T0) )); [ $left -lt 70 ] && { echo "skip $run"; continue; }
  tree=$PWD; [ $run = before ] && tree=/tmp/before
  (cd $tree && PYTHONPATH=$tree:/tmp/site MIOFIND_SYSTEM_DB=$tree/finddb/sm_90-132.sqlite MIOFIND_DB=/tmp/user-$run.sqlite \
    timeout $left python3 bench/bench_graph_step.py --out $R/$run --models inception_v3,mobilenet_v2,resnet50 \
    --configs infer1-fp32,infer1-amp > $R/$run.log 2>&1)
  echo "$run rc=$? $(( $(date +%s) - T0 )) s"; grep "| infer" $R/$run/bench_graph_step.md
done
tar czf $OUT/r.tgz -C $OUT r
echo "total $(( $(date +%s) - T0 )) s"
