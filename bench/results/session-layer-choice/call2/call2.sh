#!/usr/bin/env bash
# Session layer-choice, call 2: the eager choice (_policy.eager: the C++ path runs the solution whose call costs a
# host-bound step least, max(GPU, host)), the torch GPU tests, then batch-1 inference of the three models
# (bench_graph_step.py, captured and eager in the same rounds, cuDNN benchmark mode as the reference) with it
# ("after") and without it ("before": a copy of the tree with eager.patch reversed), alternating processes.
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
rm -rf /tmp/before && cp -r $PWD /tmp/before && (cd /tmp/before && patch -s -R -p1 < bench/results/session-layer-choice/call2/eager.patch) \
  && echo "before tree: $(grep -c 'def eager' /tmp/before/miofind/torch/_policy.py) eager functions"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
echo "setup $(( $(date +%s) - T0 )) s"
PYTHONPATH=$PWD:/tmp/site timeout 240 python3 -m pytest -q -m gpu -n 8 -p no:cacheprovider tests/torch/test_fast.py \
  tests/torch/test_torch_gpu.py > $R/tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - T0 )) s: $(tail -1 $R/tests.log)"
for run in after-1 before-1 after-2 before-2; do
  left=$(( 570 - ($(date +%s) - T0) )); [ $left -lt 75 ] && { echo "skip $run"; continue; }
  tree=$PWD; [ ${run%-*} = before ] && tree=/tmp/before
  (cd $tree && PYTHONPATH=$tree:/tmp/site MIOFIND_SYSTEM_DB=$tree/finddb/sm_90-132.sqlite MIOFIND_DB=/tmp/user-$run.sqlite \
    timeout $left python3 bench/bench_graph_step.py --out $R/$run --models inception_v3,mobilenet_v2,resnet50 \
    --configs infer1-fp32,infer1-amp > $R/$run.log 2>&1)
  echo "$run rc=$? $(( $(date +%s) - T0 )) s"; grep "| infer" $R/$run/bench_graph_step.md
done
tar czf $OUT/r.tgz -C $OUT r
echo "total $(( $(date +%s) - T0 )) s"
