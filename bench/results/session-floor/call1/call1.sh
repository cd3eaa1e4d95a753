#!/usr/bin/env bash
# Session floor, call 1 (code of this session's first commit, no library change since 7753101): the host floor of an
# eager training step (bench/step_host_floor.py: cuDNN, miofind.torch and convolutions that compute nothing) on
# MobileNetV2 and ResNet-50 FP32 and MobileNetV2 AMP; bench_graph_step batch-1 inference twice (issue 17's batch-1
# eager target at the committed code, the C++ extension built first); ResNet-50's first training step (first_step.py).
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
git log -1 --format=%H > $R/commit.txt 2>/dev/null
python3 -c "from miofind.torch import _fast; print(_fast.build())" > $R/build.log 2>&1   # as miofind warmup does
echo "setup $(( $(date +%s) - T0 )) s"
save() { tar czf $OUT/r.tgz -C $OUT r; }
export MIOFIND_SYSTEM_DB=$PWD/finddb/sm_90-132.sqlite
MIOFIND_DB=/tmp/u-floor.sqlite timeout 200 python3 bench/step_host_floor.py --out $R/floor-fp32 --models mobilenet_v2,resnet50 \
  --config train32-fp32 --rounds 3 --iters 15 > $R/floor-fp32.log 2>&1
echo "floor fp32 rc=$? $(( $(date +%s) - T0 )) s"; grep "^| mob\|^| res" $R/floor-fp32/step_host_floor.md; save
MIOFIND_DB=/tmp/u-floor.sqlite timeout 100 python3 bench/step_host_floor.py --out $R/floor-amp --models mobilenet_v2 \
  --config train32-amp --rounds 3 --iters 15 > $R/floor-amp.log 2>&1
echo "floor amp rc=$? $(( $(date +%s) - T0 )) s"; grep "^| mob" $R/floor-amp/step_host_floor.md; save
for i in 1 2; do
  left=$(( 560 - ($(date +%s) - T0) )); [ $left -lt 80 ] && { echo "skip graph $i"; continue; }
  MIOFIND_DB=/tmp/user-g$i.sqlite timeout $left python3 bench/bench_graph_step.py --out $R/infer$i \
    --models inception_v3,mobilenet_v2,resnet50 --configs infer1-fp32,infer1-amp > $R/infer$i.log 2>&1
  echo "infer$i rc=$? $(( $(date +%s) - T0 )) s"; grep "| infer" $R/infer$i/bench_graph_step.md; save
done
left=$(( 580 - ($(date +%s) - T0) ))
if [ $left -gt 90 ]; then
  unset MIOFIND_SYSTEM_DB
  timeout 100 python3 bench/first_step.py --out $R/first-fill --configs train32-fp32,train32-amp --backends miofind \
    --rounds 1 > $R/first-fill.log 2>&1; echo "fill rc=$? $(( $(date +%s) - T0 )) s"
  left=$(( 585 - ($(date +%s) - T0) ))
  timeout $left python3 bench/first_step.py --out $R/first --configs train32-fp32,train32-amp --backends miofind,heuristic \
    --rounds 2 --setup-ms 500 > $R/first.log 2>&1
  echo "first rc=$? $(( $(date +%s) - T0 )) s"; grep "^round" $R/first.log | cut -c1-110
fi
save
echo "total $(( $(date +%s) - T0 )) s"
